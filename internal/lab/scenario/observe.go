package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/labqueries"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// Observe reads the counts now: the API's audit of every tracked order, the
// fakes' records of real charges and e-mails, and the provider calls logged.
func (s *Stage) Observe(ctx context.Context) (Counts, error) {
	c := Counts{Orders: len(s.orders), RecordsCommitted: s.kafkaRecordsCommitted, RecordsWritten: s.kafkaRecordsWritten}
	tracked := map[string]bool{}
	for _, id := range s.orders {
		tracked[id.String()] = true
		a, err := s.audit(ctx, id)
		if err != nil {
			return Counts{}, err
		}
		c.ExecOrderPaid += a.Executions["order_paid"]
		c.ExecOrderConfirmed += a.Executions["order_confirmed"]
		c.Paid += a.Effects[effect.Paid]
		c.Commission += a.Effects[effect.Commission]
		c.Enqueued += a.Effects[effect.ConfirmationEnqueued]
		c.Delivered += a.Effects[effect.ConfirmationDelivered]
		c.StockReserved += a.Effects[effect.StockReserved]
		c.Refunded += a.Effects[effect.Refunded]
		c.StockReleased += a.Effects[effect.StockReleased]
		c.Reversed += a.Effects[effect.CommissionReversed]
		c.ExecOrderRefunded += a.Executions["order_refunded"]
		c.ExecRefundConfirmed += a.Executions["refund_confirmed"]
		c.ExecRefundRequested += a.Executions["refund_requested"]
		c.RefundFailed += a.Effects[effect.RefundFailed]
		c.Recorded += a.Effects[effect.Charges]
		c.Reconciled += int64(len(a.Reconciled))
	}
	charges, err := s.charges(ctx)
	if err != nil {
		return Counts{}, err
	}
	for _, ch := range charges {
		if tracked[ch.OrderID] {
			c.Charges++
		}
	}
	sent, err := s.notifications(ctx)
	if err != nil {
		return Counts{}, err
	}
	for _, n := range sent {
		switch {
		case !tracked[n.OrderID]:
		case n.Template == notify.TemplateOrderRefunded:
			c.RefundNotices++
		default:
			c.Notified++
		}
	}
	refunds, err := s.refunds(ctx)
	if err != nil {
		return Counts{}, err
	}
	for _, r := range refunds {
		if tracked[r.OrderID] {
			c.Refunds++
		}
	}
	if err := s.observeRefusals(ctx, &c, tracked); err != nil {
		return Counts{}, err
	}
	if c.ProviderCalls, err = labqueries.New(s.pool).ScenarioProviderCalls(ctx, s.orders); err != nil {
		return Counts{}, fmt.Errorf("count provider calls: %w", err)
	}
	if c.Accepted, err = labqueries.New(s.pool).ScenarioEventsAccepted(ctx, s.orders); err != nil {
		return Counts{}, fmt.Errorf("count the payment events accepted: %w", err)
	}
	for handler, n := range map[string]*int64{consumer.HandlerOrderConfirmed: &c.DoneOrderConfirmed, consumer.HandlerRefundConfirmed: &c.DoneRefundConfirmed} {
		if *n, err = labqueries.New(s.pool).ScenarioRunsDone(ctx, labqueries.ScenarioRunsDoneParams{OrderIds: s.orders, Handler: handler}); err != nil {
			return Counts{}, fmt.Errorf("count the runs of %s done: %w", handler, err)
		}
	}
	return c, nil
}

// audits are the API's answers to GET /orders/{id}/audit for every tracked
// order, each as one line of JSON, as the API wrote it: what a reader who
// curls the audit sees.
func (s *Stage) audits(ctx context.Context) ([]string, error) {
	var out []string
	for _, id := range s.orders {
		var raw json.RawMessage
		if err := s.must(ctx, "GET", s.APIURL()+"/orders/"+id.String()+"/audit", nil, &raw); err != nil {
			return nil, fmt.Errorf("read the audit: %w", err)
		}
		var line bytes.Buffer
		if err := json.Compact(&line, raw); err != nil {
			return nil, fmt.Errorf("read the audit of %s: %w", id, err)
		}
		out = append(out, line.String())
	}
	return out, nil
}

// WaitFor polls the counts until cond holds, for at most timeout.
func (s *Stage) WaitFor(ctx context.Context, what string, timeout time.Duration, cond func(Counts) bool) (Counts, error) {
	deadline := time.Now().Add(timeout)
	var last Counts
	var lastErr error
	for time.Now().Before(deadline) {
		c, err := s.Observe(ctx)
		if err == nil && cond(c) {
			s.Logf("reached: %s: %+v", what, c)
			return c, nil
		}
		last, lastErr = c, err
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return last, err
		}
	}
	if lastErr != nil {
		return last, fmt.Errorf("%s: not reached within %s: %w", what, timeout, lastErr)
	}
	return last, fmt.Errorf("%s: not reached within %s; last counts %+v", what, timeout, last)
}

// fromWAL reports whether the stage's outbox is relayed from the WAL
// (OUTBOX_RELAY=logical, the scenario's or the runner's).
func (s *Stage) fromWAL() bool {
	return s.relay == config.RelayLogical || s.cfg.Env["OUTBOX_RELAY"] == config.RelayLogical
}

// settle waits until the flow has run its course (settled), the outbox is
// empty and no count has changed for quiet: the system has done everything
// it will do. It returns the final counts.
func (s *Stage) settle(ctx context.Context, settled func(Counts) bool, quiet, timeout time.Duration) (Counts, error) {
	deadline := time.Now().Add(timeout)
	var last Counts
	var lastErr error
	stableSince := time.Now()
	for time.Now().Before(deadline) {
		c, err := s.Observe(ctx)
		// The polling relay's backlog; the relay from the WAL leaves it
		// behind (its slot has no row count), and the quiet period covers it.
		if err == nil && !s.fromWAL() {
			var backlog int64
			backlog, err = s.q.OutboxBacklog(ctx)
			if err == nil && backlog > 0 {
				err = fmt.Errorf("%d message(s) still in the outbox", backlog)
			}
		}
		if err == nil && s.cfg.Broker == "postgres" {
			err = s.topicsDrained(ctx)
		}
		switch {
		case err != nil:
			lastErr = err
			stableSince = time.Now()
		case c != last:
			last, lastErr = c, nil
			stableSince = time.Now()
		case settled(c) && time.Since(stableSince) >= quiet:
			return c, nil
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return last, err
		}
	}
	if lastErr != nil {
		return last, fmt.Errorf("did not settle within %s: %w", timeout, lastErr)
	}
	return last, fmt.Errorf("did not settle within %s; last counts %+v", timeout, last)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// topicsDrained fails while a message published on the postgres broker is not
// yet consumed. Counts alone can stand still for longer than the quiet
// period while one is waiting: a row becomes visible to the consumer only
// once every older transaction on the whole server has ended, and other
// scenarios' and tests' handlers hold transactions open for seconds.
func (s *Stage) topicsDrained(ctx context.Context) error {
	for _, t := range consumer.Subscriptions() {
		messages, offsets := pgx.Identifier{"watermill_" + t.Topic}.Sanitize(), pgx.Identifier{"watermill_offsets_" + t.Topic}.Sanitize()
		var exists bool
		if err := s.pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL", messages, offsets).Scan(&exists); err != nil {
			return fmt.Errorf("look for the %s tables: %w", t.Topic, err)
		}
		if !exists {
			continue // nothing published on this topic yet
		}
		var waiting int64
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+messages+` m
			WHERE NOT EXISTS (SELECT 1 FROM `+offsets+` o WHERE o.consumer_group = $1
				AND (o.last_processed_transaction_id, o.offset_acked) >= (m.transaction_id, m."offset"))`, t.Group).Scan(&waiting)
		if err != nil {
			return fmt.Errorf("count %s messages not yet consumed: %w", t.Topic, err)
		}
		if waiting > 0 {
			return fmt.Errorf("%d %s message(s) not yet consumed", waiting, t.Topic)
		}
	}
	return nil
}
