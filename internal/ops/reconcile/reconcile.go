package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// MinGrace is the shortest Grace that leaves work in flight alone: an api
// request may still be working on an order's charge this long after it
// began (payment.MaxChargeInFlight: the charge lease, 30s, and then a
// gateway call of at most payment.GatewayTimeout, 10s). orderpaid reconcile
// refuses a shorter --grace outside a dev run, where the lab's scenarios
// and soak shorten it on orders they drive themselves.
const MinGrace = payment.MaxChargeInFlight

// Config tunes a run. Zero values take the documented defaults.
type Config struct {
	// Window: only orders created this long ago or later are held against
	// the providers; 0 (the default) holds every order.
	Window time.Duration
	// Grace is how long an order must have been quiet (since it was
	// created, paid or refunded) before what it lacks is missing, not in
	// flight (default 1m, at least MinGrace outside the lab). An attempt
	// charging past its lease needs no grace: its lease is the wait.
	Grace time.Duration
	// DryRun reports and settles nothing.
	DryRun bool
}

// Reconciler holds the service's record against the providers'.
type Reconciler struct {
	pool      *pgxpool.Pool
	providers Providers
	events    *webhook.Ingestor // where a settled charge or refund is accepted, as its webhook would be
	cfg       Config
}

// New returns a Reconciler. events accepts the payment.succeeded and
// payment.refunded that settle a charge or a refund the service missed.
func New(pool *pgxpool.Pool, providers Providers, events *webhook.Ingestor, cfg Config) *Reconciler {
	cfg.Grace = cmp.Or(cfg.Grace, time.Minute)
	return &Reconciler{pool: pool, providers: providers, events: events, cfg: cfg}
}

// Run holds every order of the window against the providers' records and
// returns what it found, each finding settled where that is safe (not in a
// dry run) and marked Waiting while the worker has not applied what its
// settlement handed it. An error stops the run: what it settled before
// stays settled.
func (r *Reconciler) Run(ctx context.Context) (Report, error) {
	theirs, err := r.read(ctx)
	if err != nil {
		return Report{}, err
	}
	ours, err := queries.New(r.pool).ReconcileOrders(ctx, queries.ReconcileOrdersParams{
		GraceMs: r.cfg.Grace.Milliseconds(), WindowMs: r.cfg.Window.Milliseconds(),
	})
	if err != nil {
		return Report{}, fmt.Errorf("read the service's record of its orders: %w", err)
	}
	rep := Report{Orders: len(ours), DryRun: r.cfg.DryRun}
	for _, o := range ours {
		for _, f := range compare(o, theirs.of(o.ID.String())) {
			if !r.cfg.DryRun && f.settle != nil {
				if f.Action, err = f.settle(ctx, r); err != nil {
					return rep, fmt.Errorf("settle %s of order %s: %w", f.Kind, f.OrderID, err)
				}
				f.Settled = true
			}
			rep.Findings = append(rep.Findings, f)
		}
	}
	return rep, r.markWaiting(ctx, &rep)
}

// records is what the providers recorded, by order id.
type records struct {
	charges       map[string][]Charge
	refunds       map[string][]Refund
	notifications map[string][]Notification
}

// theirs is one order's part of the providers' records.
type theirs struct {
	charges []Charge
	refunds []Refund
	emails  []Notification // order_confirmed e-mails only
}

func (rs records) of(orderID string) theirs {
	t := theirs{charges: rs.charges[orderID], refunds: rs.refunds[orderID]}
	for _, n := range rs.notifications[orderID] {
		if n.Template == notify.TemplateOrderConfirmed {
			t.emails = append(t.emails, n)
		}
	}
	return t
}

// read reads the providers' records before the service's: whatever the
// providers did after it, the service's record is at least as new.
func (r *Reconciler) read(ctx context.Context) (records, error) {
	charges, err := r.providers.Charges(ctx)
	if err != nil {
		return records{}, err
	}
	refunds, err := r.providers.Refunds(ctx)
	if err != nil {
		return records{}, err
	}
	sent, err := r.providers.Notifications(ctx)
	if err != nil {
		return records{}, err
	}
	rs := records{charges: map[string][]Charge{}, refunds: map[string][]Refund{}, notifications: map[string][]Notification{}}
	for _, c := range charges {
		rs.charges[c.OrderID] = append(rs.charges[c.OrderID], c)
	}
	for _, f := range refunds {
		rs.refunds[f.OrderID] = append(rs.refunds[f.OrderID], f)
	}
	for _, n := range sent {
		rs.notifications[n.OrderID] = append(rs.notifications[n.OrderID], n)
	}
	return rs, nil
}

// compare lists one order's findings: what the two records disagree on.
func compare(o queries.ReconcileOrdersRow, t theirs) []Finding {
	var fs []Finding
	add := func(k Kind, detail string, settle settleFunc) {
		fs = append(fs, Finding{OrderID: o.ID, Kind: k, Detail: detail, settle: settle})
	}
	stuck := o.LeaseExpired
	switch {
	case len(t.charges) > 1:
		add(ChargedTwice, fmt.Sprintf("the gateway holds %d charges of the order (%s and %s): refund one in its dashboard",
			len(t.charges), t.charges[0].ID, t.charges[1].ID), nil)
	case len(t.charges) == 1 && o.Status == order.StatusPending && !o.PaymentAccepted && (stuck || o.SettledLongAgo):
		c := t.charges[0]
		add(ChargeNotApplied, fmt.Sprintf("the gateway charged %d cents (%s, key %s); the order is still pending", c.AmountCents, c.ID, c.IdempotencyKey),
			completeCharge(o, c))
	case len(t.charges) == 0 && stuck:
		key := payment.ChargeKey(o.ID, o.ChargeAttempt.Int32)
		add(ChargeStuck, fmt.Sprintf("attempt %d is charging past its lease and the gateway has no charge under %s", o.ChargeAttempt.Int32, key),
			releaseCharge(o, key))
	case len(t.charges) == 0 && o.ChargeID.Valid:
		add(ChargeUnknown, fmt.Sprintf("the service recorded charge %s, which the gateway does not hold", o.ChargeID.String), nil)
	}
	switch {
	case len(t.refunds) > 0 && o.Status != order.StatusRefunded && o.SettledLongAgo:
		f := t.refunds[0]
		add(RefundNotApplied, fmt.Sprintf("the gateway refunded %d cents (%s); the order is %s", f.AmountCents, f.ID, o.Status),
			recordRefund(o, f))
	case len(t.refunds) == 0 && o.Status == order.StatusRefundFailed:
		add(RefundFailed, "the gateway refused the order's refund for good: refund it in the gateway's dashboard (the poison queue holds the reason); the next run records it", nil)
	}
	if o.Status == order.StatusPaid && len(t.emails) == 0 && o.SettledLongAgo {
		if o.ConfirmationDelivered || o.Notified {
			add(NotificationMissing, "the service recorded the e-mail as sent, the provider holds none: ask the provider", nil)
		} else {
			add(NotificationMissing, "the order is paid and the provider holds no order_confirmed e-mail for it", resendConfirmation(o))
		}
	}
	return fs
}
