package consumer_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// confirmations returns the order_confirmed message of each order, each
// twice (a redelivery caught up with the first copy in one batch).
func confirmations(t *testing.T, b *bundle, n int) ([]queries.Order, []*message.Message) {
	t.Helper()
	var orders []queries.Order
	var msgs []*message.Message
	for range n {
		o := b.newOrder(t)
		orders = append(orders, o)
		m := outboxConfirmation(t, o)
		msgs = append(msgs, m, m.Copy())
	}
	return orders, msgs
}

func (b *bundle) logRows(t *testing.T) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) FROM notification_log`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A batch of confirmations, each message twice, then the whole batch again
// (a worker killed before its acks): one e-mail per order, one provider
// call per order (the inbox stops the second batch before any call), and
// every message acknowledged.
func TestOrderConfirmedBatchSendsOncePerOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	orders, msgs := confirmations(t, b, 20)
	for round := range 2 {
		for i, err := range b.c.HandleOrderConfirmedBatch(copies(msgs)) {
			if err != nil {
				t.Fatalf("round %d, message %d: %v", round+1, i, err)
			}
		}
	}
	if sent := len(b.provider.Notifications()); sent != len(orders) {
		t.Errorf("the provider sent %d e-mails for %d orders", sent, len(orders))
	}
	if rows := b.logRows(t); rows != len(orders) {
		t.Errorf("%d provider answers logged, want %d: the inbox let a redelivered batch call again", rows, len(orders))
	}
	for _, o := range orders {
		if a := b.audit(t, o.ID); a.ConfirmationDelivered != 1 || a.NotificationSent != 1 || a.ExecutionsOrderConfirmed != 4 {
			t.Fatalf("order %s: delivered %d, sent %d, executions %d; want 1, 1, 4", o.ID, a.ConfirmationDelivered, a.NotificationSent, a.ExecutionsOrderConfirmed)
		}
	}
}

// One refusal and one "not now" in a batch are those messages' answers
// alone: the refused one is permanent (the poison queue), the one told to
// wait is transient (redelivered), and the rest are sent and acknowledged.
func TestOrderConfirmedBatchIsolatesAProviderFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status    int
		permanent bool
	}{{http.StatusUnprocessableEntity, true}, {http.StatusServiceUnavailable, false}} {
		b := setup(t, nil)
		_, msgs := confirmations(t, b, 10)
		single := dedupeCopies(msgs)
		if err := b.provider.SetControl(fakes.NotifierControl{FailNext: 1, FailStatus: tc.status}); err != nil {
			t.Fatal(err)
		}
		errs := b.c.HandleOrderConfirmedBatch(copies(single))
		failed := 0
		for _, err := range errs {
			if err != nil {
				failed++
				if consumer.IsPermanent(err) != tc.permanent {
					t.Errorf("status %d: %v, permanent %v; want %v", tc.status, err, consumer.IsPermanent(err), tc.permanent)
				}
			}
		}
		if failed != 1 || len(b.provider.Notifications()) != len(single)-1 {
			t.Errorf("status %d: %d failed, %d sent; want 1 and %d", tc.status, failed, len(b.provider.Notifications()), len(single)-1)
		}
	}
}

// A crash right after the provider answered, before the inbox row: the
// redelivered batch calls again with the same keys and the provider answers
// from its store: still one e-mail per order.
func TestOrderConfirmedBatchCrashAfterTheCallsSendsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	orders, msgs := confirmations(t, b, 5)
	single := dedupeCopies(msgs)
	b.faults.Arm(consumer.FaultAfterProviderCall, fault.Fail, len(single))
	for _, err := range b.c.HandleOrderConfirmedBatch(copies(single)) {
		if !errors.Is(err, fault.ErrInjected) {
			t.Fatalf("first batch: %v, want the injected failure for every message", err)
		}
	}
	for _, err := range b.c.HandleOrderConfirmedBatch(copies(single)) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if sent := len(b.provider.Notifications()); sent != len(orders) {
		t.Errorf("the provider sent %d e-mails for %d orders", sent, len(orders))
	}
}

// dedupeCopies keeps the first copy of each message id.
func dedupeCopies(msgs []*message.Message) []*message.Message {
	seen := map[string]bool{}
	var out []*message.Message
	for _, m := range msgs {
		if !seen[m.UUID] {
			seen[m.UUID] = true
			out = append(out, m)
		}
	}
	return out
}
