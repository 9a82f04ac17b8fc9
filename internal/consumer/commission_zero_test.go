package consumer_test

import (
	"context"
	"testing"

	"github.com/orderpaid/orderpaid/internal/order"
)

// An order under 10 cents earns a 0-cent commission at 10%: the commission
// step answers not_applicable and writes no ledger row, so the audit's
// commission is 0, not a 0-cent credit counted as 1. From 10 cents on, the
// commission is released as usual.
func TestCommissionThatRoundsToZeroIsNotApplicable(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		amountCents    int64
		wantOutcome    string
		wantCommission int64
	}{
		{amountCents: 1, wantOutcome: "not_applicable", wantCommission: 0},
		{amountCents: 9, wantOutcome: "not_applicable", wantCommission: 0},
		{amountCents: 10, wantOutcome: "applied", wantCommission: 1},
	} {
		o, err := order.Create(ctx, b.q, order.NewOrder{CustomerID: "c1", AffiliateID: "a1", AmountCents: tc.amountCents, Currency: "BRL"})
		if err != nil {
			t.Fatal(err)
		}
		if err := deliver(b.c.HandleOrderPaid, orderPaid(t, o, "evt_small")); err != nil {
			t.Fatalf("%d cents: %v", tc.amountCents, err)
		}
		a := b.audit(t, o.ID)
		if a.Paid != 1 || a.Commission != tc.wantCommission {
			t.Errorf("%d cents: audit paid=%d commission=%d, want paid 1 and commission %d", tc.amountCents, a.Paid, a.Commission, tc.wantCommission)
		}
		rows := b.count(t, "SELECT count(*) FROM ledger_entries WHERE order_id = $1", o.ID)
		var outcome string
		if err := b.pool.QueryRow(ctx, `SELECT r->>'outcome' FROM executions, jsonb_array_elements(outcomes) r
			WHERE order_id = $1 AND r->>'effect' = 'commission'`, o.ID).Scan(&outcome); err != nil {
			t.Fatalf("%d cents: read the commission outcome: %v", tc.amountCents, err)
		}
		if int64(rows) != tc.wantCommission || outcome != tc.wantOutcome {
			t.Errorf("%d cents: %d ledger rows, outcome %q; want %d and %q", tc.amountCents, rows, outcome, tc.wantCommission, tc.wantOutcome)
		}
	}
}
