package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/ops/reconcile"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// TestChargeTakenOverIsNotReleased: an attempt reconcile read as charging
// past its lease, and that a request took over before reconcile released
// it, keeps its new holder's lease. The take-over (OrderChargeTakeOver) is
// held uncommitted until reconcile's release waits for its row, then
// committed: the release re-reads a live lease and changes nothing. It
// kills the mutant of ReconcileChargeRelease without `AND locked_until <
// now()`: the row is still charging, so the mutant releases it, and the
// live holder's charge could be taken over by a third request under the
// same gateway key while it is at the gateway.
func TestChargeTakenOverIsNotReleased(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	id := w.order()
	w.exec(`INSERT INTO order_charges (order_id, holder_scope, holder_key, locked_until)
	        VALUES ($1, 'c1', 'k1', now() - interval '1 minute')`, id)

	takeOver, err := w.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = takeOver.Rollback(ctx) }()
	if n, err := queries.New(takeOver).OrderChargeTakeOver(ctx, queries.OrderChargeTakeOverParams{
		OrderID: id, Attempt: 1, HolderScope: "c2", HolderKey: "k2", LeaseMs: time.Minute.Milliseconds(),
	}); err != nil || n != 1 {
		t.Fatalf("take the attempt over: %d rows, %v", n, err)
	}
	type result struct {
		rep reconcile.Report
		err error
	}
	done := make(chan result, 1)
	go func() { rep, err := w.reconciler(false).Run(ctx); done <- result{rep, err} }()
	pgtest.WaitLockWaiters(t, w.pool, 1) // the release, behind the take-over
	if err := takeOver.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("reconcile: %v", res.err)
	}
	only(t, res.rep, reconcile.ChargeStuck)

	if n := w.count(`SELECT count(*) FROM order_charges WHERE order_id = $1 AND attempt = 1
	                   AND state = 'charging' AND holder_key = 'k2' AND locked_until > now()`, id); n != 1 {
		t.Errorf("the attempt taken over is no longer charging under k2's live lease")
	}
	if n := w.count(`SELECT count(*) FROM reconcile_actions WHERE order_id = $1`, id); n != 0 {
		t.Errorf("%d reconcile actions recorded, want none", n)
	}
}
