package soak_test

import (
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/soak"
)

// Reconcile run twice at once during a 1,000-order soak with api kills
// (issue 27): customers pay through the api while it is SIGKILLed every 3s,
// a tenth of the payment.succeeded webhooks never arrive, and two
// `orderpaid reconcile` run at once every 6s and after the load. Every
// charge is paid once, nothing is left charging past its lease, each
// charge reconcile completes is completed once, and the last reconcile
// finds nothing. About 80s: most of it is the 30s lease the retrying
// customers and the stuck attempts wait out. It fails when reconcile
// completes a charge under a fresh event id each run (two runs accept it
// twice) or does not release a stuck attempt.
func TestReconcileSoak(t *testing.T) {
	bin := parallelSoak(t)
	rep, err := soak.RunReconcile(t.Context(), soak.ReconcileConfig{
		Binary: bin, AdminURL: pgtest.AdminURL(), Broker: "postgres", LogDir: t.TempDir(),
		Orders: 1000, Workers: 1,
		SettleTimeout: 2 * time.Minute, KeepOnFailure: true, Progress: logWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	requirePassed(t, rep)
	// It proves something only if the kills left the gaps reconcile closes.
	f := rep.Facts
	if len(rep.Faults) < 5 || rep.CutBefore == 0 || f.AnswersLost == 0 ||
		f.Actions["charge_completed"] == 0 || f.Actions["charge_released"] == 0 {
		t.Errorf("too few gaps to prove anything: %d api kills, %d charges never sent, %d answers lost, %d completed, %d released",
			len(rep.Faults), rep.CutBefore, f.AnswersLost, f.Actions["charge_completed"], f.Actions["charge_released"])
	}
	faultKinds(t, rep.Faults)
}
