package crashmatrix

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
	"github.com/orderpaid/orderpaid/internal/lab/scenario"
)

// RefundFlows are the flows of Flows that a cell crashes in after the
// payment has run its course, while the order is refunded (refundStory).
var RefundFlows = []string{"refund", "refund_webhook", "refund_relay", "order_refunded", "refund_confirmed"}

// Refunds reports whether the cell's crash is in the refund: its world pays
// the order, lets the payment run its course, then refunds it.
func (c Cell) Refunds() bool { return slices.Contains(RefundFlows, c.Flow()) }

// refundChecks are what a refund cell is held to besides the payment's
// effects: one refund at the gateway, the order moved to refunded once, the
// stock given back once, the commission reversed once, one refund notice.
func refundChecks() []scenario.Check {
	var out []scenario.Check
	for _, m := range []scenario.Metric{scenario.Refunds, scenario.Refunded, scenario.StockReleased, scenario.Reversed, scenario.RefundNotices} {
		out = append(out, scenario.Check{Metric: m, Min: 1, Max: 1})
	}
	return out
}

// procs are a cell's api and worker.
type procs struct{ api, worker *childproc.Proc }

// of is the cell's process, the one that dies, and its arguments.
func (ps procs) of(c Cell, apiArgs, workerArgs []string) (*childproc.Proc, []string) {
	if c.Process() == "api" {
		return ps.api, apiArgs
	}
	return ps.worker, workerArgs
}

// refundStory is a refund cell once its order is paid: the payment's flow
// runs its course (the e-mail sent), the customer asks for the refund with
// a key, and the cell's process dies in the refund's flow. Recovery is the
// payment's: the process restarted, redeliveries, the client retrying its
// key until it has an answer. A late webhook is the refund's
// payment.refunded, held until the client has its answer; two events are
// the refund's event sent again under a new id. With cell nil (the clean
// run) nothing dies.
func refundStory(ctx context.Context, s *scenario.Stage, id uuid.UUID, ps procs, apiArgs, workerArgs []string, cell *Cell, p Providers, answers string) error {
	if _, err := s.WaitFor(ctx, "the payment's e-mail, before the refund", 60*time.Second,
		func(c scenario.Counts) bool { return c.Notified >= 1 }); err != nil {
		return err
	}
	if p.LateWebhook {
		if err := s.HoldWebhooks(ctx, true); err != nil {
			return err
		}
	}
	key := "refund-" + id.String()
	status, err := s.RequestRefund(ctx, id, key, 10*time.Second)
	s.Logf("refund: status %d, err %v", status, err)
	if cell == nil {
		if err == nil && status != http.StatusCreated {
			err = fmt.Errorf("the clean refund answered %d, want 201", status)
		}
		return err
	}
	answered := err == nil && status == http.StatusCreated
	retries := func() error {
		if answered {
			return nil
		}
		return retryRefund(ctx, s, id, key)
	}
	dead, args := ps.of(*cell, apiArgs, workerArgs)
	second := func() error { return nil }
	die := func() error { return restart(ctx, s, *cell, dead, args, p, &second) }
	// A crash in the refund's request comes before the client's retries;
	// any other after the refund's webhook (late, it is released first).
	if err := recoverFrom(ctx, s, p, !strings.HasPrefix(cell.Boundary, "api/orders_refunds/"), die, retries, func() error { return nil }); err != nil {
		return err
	}
	if err := second(); err != nil {
		return err
	}
	if !p.TwoEvents {
		return nil
	}
	s.WaitFor(ctx, "the refund's recovery", LostAfter, func(c scenario.Counts) bool { return c.DoneRefundConfirmed >= 1 })
	if err := sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	if err := appendLine(answers, endOfRecovery); err != nil {
		return err
	}
	// On a broker that redelivers only once its ack deadline has passed
	// (NATS), a refund_requested whose worker died is handled late.
	if _, err := s.WaitFor(ctx, "the refund made, before its second event", 90*time.Second,
		func(c scenario.Counts) bool { return c.Refunds >= 1 }); err != nil {
		return err
	}
	refundID, err := s.RefundOf(ctx, id)
	if err != nil {
		return fmt.Errorf("the refund's second event: %w", err)
	}
	before, err := s.Observe(ctx)
	if err != nil {
		return err
	}
	if err := s.RedeliverRefund(ctx, refundID, 1, true); err != nil {
		return err
	}
	_, err = s.WaitFor(ctx, "the refund's second event handled", 60*time.Second,
		func(c scenario.Counts) bool { return c.ExecOrderRefunded > before.ExecOrderRefunded })
	return err
}

// retryRefund is the customer after a crash: the refund asked again with
// its key until an answer comes (a 409 while the key is held means wait).
func retryRefund(ctx context.Context, s *scenario.Stage, id uuid.UUID, key string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, err := s.RequestRefund(ctx, id, key, 10*time.Second)
		s.Logf("refund again with the same key: %d (err %v)", status, err)
		if err == nil && (status == http.StatusCreated || status == http.StatusOK) {
			return nil
		}
		if err == nil && status >= 400 && status != http.StatusConflict && status < 500 {
			return fmt.Errorf("the refund's retry was refused: %d", status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the refund's retries got no answer within 30s: last %d (%v)", status, err)
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}
