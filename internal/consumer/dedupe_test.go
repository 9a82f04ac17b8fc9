package consumer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// The wrong fix loses the commission: the failed first run marked the id
// seen, so the retry is skipped and reported as a success. Without the
// dedupe, the same retry completes step 2.
func TestDedupeExecutionsLosesTheCommissionAfterAPartialFailure(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name           string
		dedupe         bool
		wantCommission int64
	}{
		{"guards only: the retry completes step 2", false, 1},
		{"execution dedupe: the retry is skipped", true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			o := b.newOrder(t)
			msg := orderPaid(t, o, "evt_1")
			h := func(m *message.Message) ([]*message.Message, error) { return nil, b.c.HandleOrderPaid(m) }
			if tt.dedupe {
				mw, err := switches.DedupeExecutions(0, watermill.NopLogger{})
				if err != nil {
					t.Fatal(err)
				}
				h = mw(h)
			}
			b.faults.Arm(consumer.FaultAfterMarkPaid, fault.Fail, 1)
			for attempt, wantErr := range []error{fault.ErrInjected, nil} {
				m := msg.Copy()
				m.SetContext(context.Background())
				if _, err := h(m); !errors.Is(err, wantErr) {
					t.Fatalf("attempt %d: err = %v, want %v", attempt+1, err, wantErr)
				}
			}
			if a := b.audit(t, o.ID); a.Paid != 1 || a.Commission != tt.wantCommission {
				t.Errorf("paid=%d commission=%d, want 1 and %d", a.Paid, a.Commission, tt.wantCommission)
			}
		})
	}
}
