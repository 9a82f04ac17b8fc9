package messages_test

import (
	"errors"
	"testing"

	"github.com/orderpaid/orderpaid/internal/messages"
)

// Every message names its order: a payload without order_id, or with an
// unknown member or trailing data, is malformed (ErrMalformed), so the
// consumer sends it to the poison queue instead of retrying it forever.
func TestDecodeRefusesAPayloadWithoutItsOrder(t *testing.T) {
	t.Parallel()
	const order = `"order_id":"7b0e5d6e-8a4f-4d7e-9d43-3c1f5a2b9e10"`
	decoders := map[string]func([]byte) error{
		"order_paid":       func(b []byte) error { _, err := messages.DecodeOrderPaid(b); return err },
		"order_confirmed":  func(b []byte) error { _, err := messages.DecodeOrderConfirmed(b); return err },
		"order_refunded":   func(b []byte) error { _, err := messages.DecodeOrderRefunded(b); return err },
		"refund_requested": func(b []byte) error { _, err := messages.DecodeRefundRequested(b); return err },
		"refund_confirmed": func(b []byte) error { _, err := messages.DecodeRefundConfirmed(b); return err },
	}
	for topic, decode := range decoders {
		for name, payload := range map[string]string{
			"no order_id":    `{}`,
			"unknown member": `{` + order + `,"x":1}`,
			"trailing data":  `{` + order + `} {}`,
		} {
			if err := decode([]byte(payload)); !errors.Is(err, messages.ErrMalformed) {
				t.Errorf("%s, %s (%s): got %v, want ErrMalformed", topic, name, payload, err)
			}
		}
	}
	// The reason is what a refund request must carry besides its order.
	if _, err := messages.DecodeRefundRequested([]byte(`{` + order + `,"reason":"customer_request"}`)); err != nil {
		t.Errorf("refund_requested with its order and a reason: %v, want it decoded", err)
	}
}
