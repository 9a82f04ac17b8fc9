package soak

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/bench"
	"github.com/orderpaid/orderpaid/internal/lab/labqueries"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/ops/reconcile"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// ReconcileFacts is what the reconcile soak found in the records, for the
// report.
type ReconcileFacts struct {
	// Charges is the charges the gateway made; Paid the orders paid.
	Charges, Paid int
	// Dropped is the payment.succeeded webhooks that never arrived.
	Dropped int
	// AnswersLost counts the charges whose gateway answer the service never
	// stored (the api died on the way); Unknown those of them whose webhook
	// was dropped too: only reconcile could tell the service.
	AnswersLost, Unknown int
	// Actions counts reconcile_actions by action; Raced the charges
	// reconcile completed whose own webhook was accepted as well (it was
	// in flight, not lost: the order was paid once all the same).
	Actions map[string]int
	Raced   int
}

// orderRecord is what the checks read of one order.
type orderRecord struct {
	bench.OrderEffects
	attempt     queries.ReconcileOrdersRow
	charges     []reconcile.Charge
	emails      int
	inbox       []labqueries.LabOrderWebhooksRow
	answered    bool // a gateway answer naming a charge is stored
	webhookLost bool
}

// accepted counts the payment.succeeded events of the order's webhook inbox
// that are reconcile's (ours) and the gateway's (theirs).
func (r orderRecord) accepted(events map[string]lostEvent) (ours, theirs int) {
	for _, ev := range r.inbox {
		if ev.EventType != "payment.succeeded" {
			continue
		}
		if _, fromGateway := events[ev.EventID]; fromGateway {
			theirs++
		} else {
			ours++
		}
	}
	return ours, theirs
}

// checkReconcile reads every order's record, the gateway's charges and the
// provider's e-mails, and judges the invariants of the reconcile soak.
// events is every payment.succeeded the gateway sent (webhookLoss): an
// event of the inbox that is not one of them is reconcile's.
func checkReconcile(ctx context.Context, pool *pgxpool.Pool, fakesURL string, orders []bench.Order, events map[string]lostEvent) ([]Check, ReconcileFacts, error) {
	recs, err := readOrders(ctx, pool, fakesURL, orders, events)
	if err != nil {
		return nil, ReconcileFacts{}, err
	}
	f := ReconcileFacts{Actions: map[string]int{}}
	for _, e := range events {
		count(&f.Dropped, e.Dropped)
	}
	var notPaid, paidTwice, paidFree, twoCharges, wrongKey, pastLease, charging, emails, effects, audit int
	var notCompleted, twice, mostEvents, unexplained int
	for _, r := range recs {
		f.Charges += len(r.charges)
		paid := r.Status == "paid"
		count(&f.Paid, paid)
		switch {
		case len(r.charges) > 0 && (!paid || r.Paid == 0):
			notPaid++
		case r.Paid > 1:
			paidTwice++
		case paid && len(r.charges) == 0:
			paidFree++
		}
		count(&twoCharges, len(r.charges) > 1)
		for _, c := range r.charges {
			count(&wrongKey, c.IdempotencyKey != payment.ChargeKey(r.ID, r.attempt.ChargeAttempt.Int32))
		}
		count(&pastLease, r.attempt.LeaseExpired)
		count(&charging, r.attempt.ChargeState.String == "charging")
		count(&emails, paid && r.emails != 1 || !paid && r.emails != 0)
		count(&effects, paid && (r.Commission != 1 || r.ConfirmationDelivered != 1) || !paid && r.Commission != 0)
		count(&audit, r.Charges != int64(len(r.charges)))
		if len(r.charges) > 0 && !r.answered {
			f.AnswersLost++
			count(&f.Unknown, r.webhookLost)
		}
		for _, a := range r.Reconciled {
			f.Actions[a]++
		}
		// The charge reconcile completed: as many events of reconcile's in
		// the webhook inbox as charge_completed actions, at most one, and
		// one for every charge whose webhook was lost. One completed while
		// its webhook was only late (the gateway's event is in the inbox
		// too) raced it.
		completed := countOf(r.Reconciled, "charge_completed")
		ours, theirs := r.accepted(events)
		count(&notCompleted, r.webhookLost && completed == 0)
		count(&twice, ours != completed || completed > 1)
		mostEvents = max(mostEvents, ours)
		switch {
		case completed == 1 && theirs > 0:
			f.Raced++
		case completed == 1 && !r.webhookLost:
			unexplained++
		}
	}
	backlog, err := queries.New(pool).OutboxBacklog(ctx)
	if err != nil {
		return nil, f, fmt.Errorf("read the outbox backlog: %w", err)
	}
	poison, err := queries.New(pool).PoisonCountPending(ctx)
	if err != nil {
		return nil, f, fmt.Errorf("read the poison queue: %w", err)
	}
	checks := []Check{
		{"every order the gateway charged paid exactly once", notPaid == 0 && paidTwice == 0 && paidFree == 0,
			fmt.Sprintf("%d charged, %d paid; %d charged and not paid, %d paid twice, %d paid without a charge", f.Charges, f.Paid, notPaid, paidTwice, paidFree)},
		{"one gateway charge per order, under its attempt's key", twoCharges == 0 && wrongKey == 0,
			fmt.Sprintf("%d orders charged twice, %d charges under another key", twoCharges, wrongKey)},
		{"nothing charging past its lease", pastLease == 0, fmt.Sprintf("%d past their lease (%d charging in all)", pastLease, charging)},
		{"one e-mail per paid order at the provider, none for others", emails == 0, fmt.Sprintf("%d orders wrong", emails)},
		{"one commission and one confirmation per paid order", effects == 0, fmt.Sprintf("%d orders wrong", effects)},
		{"every lost webhook's charge completed by reconcile", notCompleted == 0,
			fmt.Sprintf("%d webhooks dropped, %d of their charges not completed", f.Dropped, notCompleted)},
		{"each charge completed once (one reconcile event per action)", twice == 0 && unexplained == 0,
			fmt.Sprintf("%d completed (%d lost, %d raced their webhook); %d orders whose charge reconcile accepted another number of times (up to %d), %d completed for no reason",
				f.Actions["charge_completed"], f.Actions["charge_completed"]-f.Raced, f.Raced, twice, mostEvents, unexplained)},
		{"the audit's charges are the gateway's, every order", audit == 0, fmt.Sprintf("%d orders differ", audit)},
		{"poison queue empty", poison == 0, fmt.Sprintf("%d pending", poison)},
		{"outbox drained", backlog == 0, fmt.Sprintf("%d rows not relayed", backlog)},
	}
	return checks, f, nil
}

// readOrders reads, for every order, its audit, its charge attempt, its
// webhook inbox and the gateway answers stored, and what the providers
// hold of it.
func readOrders(ctx context.Context, pool *pgxpool.Pool, fakesURL string, orders []bench.Order, events map[string]lostEvent) ([]orderRecord, error) {
	providers := reconcile.NewHTTPProviders(fakesURL, nil)
	charges, err := providers.Charges(ctx)
	if err != nil {
		return nil, err
	}
	sent, err := providers.Notifications(ctx)
	if err != nil {
		return nil, err
	}
	effects, err := bench.AuditOrders(ctx, pool, orders)
	if err != nil {
		return nil, err
	}
	attempts, err := queries.New(pool).ReconcileOrders(ctx, queries.ReconcileOrdersParams{GraceMs: 1})
	if err != nil {
		return nil, fmt.Errorf("read the charge attempts: %w", err)
	}
	byID := map[uuid.UUID]*orderRecord{}
	recs := make([]orderRecord, len(effects))
	for i, e := range effects {
		recs[i].OrderEffects = e
		byID[e.ID] = &recs[i]
	}
	for _, a := range attempts {
		if r := byID[a.ID]; r != nil {
			r.attempt = a
		}
	}
	for _, c := range charges {
		if r := byID[uuid.MustParse(c.OrderID)]; r != nil {
			r.charges = append(r.charges, c)
		}
	}
	for _, n := range sent {
		if r := byID[uuid.MustParse(n.OrderID)]; r != nil && n.Template == notify.TemplateOrderConfirmed {
			r.emails++
		}
	}
	for _, e := range events {
		if r := byID[uuid.MustParse(e.OrderID)]; r != nil && e.Dropped {
			r.webhookLost = true
		}
	}
	lab := labqueries.New(pool)
	for i := range recs {
		r := &recs[i]
		if r.inbox, err = lab.LabOrderWebhooks(ctx, r.ID); err != nil {
			return nil, fmt.Errorf("read the webhook inbox of order %s: %w", r.ID, err)
		}
		calls, err := lab.LabOrderGatewayCalls(ctx, r.ID)
		if err != nil {
			return nil, fmt.Errorf("read the gateway calls of order %s: %w", r.ID, err)
		}
		r.answered = slices.ContainsFunc(calls, func(c labqueries.LabOrderGatewayCallsRow) bool { return c.ChargeID.Valid })
	}
	return recs, nil
}

// runChecks judges the reconcile runs: every run ran (exit 0, or 1 while
// findings were left beside live traffic), and the final one found
// nothing.
func runChecks(runs []ReconcileRun, final ReconcileRun) []Check {
	var failed []string
	for _, r := range runs {
		if r.Err != nil {
			failed = append(failed, r.Err.Error())
		}
	}
	detail := fmt.Sprintf("%d runs, %d failed", len(runs), len(failed))
	if len(failed) > 0 {
		detail += ": " + strings.Join(failed[:min(len(failed), 2)], "; ")
	}
	kinds := map[reconcile.Kind]int{}
	for _, f := range final.Report.Findings {
		kinds[f.Kind]++
	}
	found := fmt.Sprintf("%d findings", len(final.Report.Findings))
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		found += fmt.Sprintf(", %s %d", k, kinds[k])
	}
	if final.Err != nil {
		found += ": " + final.Err.Error()
	}
	return []Check{
		{"every reconcile ran (exit 0, 1 with findings left, or 3 waiting for the worker)", len(failed) == 0, detail},
		{"the last reconcile finds nothing and exits 0", final.Err == nil && final.Exit == 0 && len(final.Report.Findings) == 0,
			fmt.Sprintf("%d orders held, %s; exit %d", final.Report.Orders, found, final.Exit)},
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}
