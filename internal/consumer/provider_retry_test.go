package consumer_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// A provider that rate limits is saying "not now", not "no". It answers 429
// with Retry-After: 1 to its first 10 calls; every one of 20 confirmations is
// still delivered, once, and nothing is poisoned. Taking the 429 for a
// refusal poisons the messages that meet it and loses their e-mails until an
// operator replays them.
func TestRateLimitedProviderDeliversEveryConfirmation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	brk := b.startRouter(t)
	if err := b.provider.SetControl(fakes.NotifierControl{FailNext: 10, FailStatus: http.StatusTooManyRequests, RetryAfterS: 1}); err != nil {
		t.Fatal(err)
	}
	const orders = 20
	placed := make([]queries.Order, orders)
	msgs := make([]*message.Message, orders)
	keyOf := make(map[string]string, orders) // order id -> its confirmation's message id
	for i := range msgs {
		placed[i] = b.newOrder(t)
		msgs[i] = outboxConfirmation(t, placed[i])
		keyOf[placed[i].ID.String()] = msgs[i].UUID
	}
	if err := brk.Publisher.Publish(messages.TopicOrderConfirmed, msgs...); err != nil {
		t.Fatal(err)
	}

	// Ten 1 s waits one after the other (the consumer reads in one line):
	// allow well over that before calling a confirmation lost.
	deadline := time.Now().Add(60 * time.Second)
	for b.count(t, "SELECT count(*) FROM consumer_inbox WHERE consumer = 'order_confirmed'")+
		b.count(t, "SELECT count(*) FROM poison_messages") < orders {
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s, %d of %d notifications sent", len(b.provider.Notifications()), orders)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if n := b.count(t, "SELECT count(*) FROM poison_messages"); n != 0 {
		t.Errorf("%d confirmations poisoned, want 0: a 429 is not a refusal", n)
	}
	if left := b.provider.Control().FailNext; left != 0 {
		t.Errorf("the provider still had %d of its 429s to give: the test did not exercise them", left)
	}
	sent := b.provider.Notifications()
	if len(sent) != orders {
		t.Errorf("provider sent %d notifications, want %d", len(sent), orders)
	}
	for _, s := range sent {
		key, ok := keyOf[s.OrderID]
		if !ok || s.IdempotencyKey != key {
			t.Errorf("notification %+v: want order one of ours, key its confirmation's message id %q", s, key)
		}
		delete(keyOf, s.OrderID) // a second notification for one order finds no key
	}
	for _, o := range placed {
		if a := b.audit(t, o.ID); a.NotificationSent != 1 || a.ConfirmationDelivered != 1 {
			t.Errorf("order %s: notification_sent=%d confirmation_delivered=%d, want 1 and 1", o.ID, a.NotificationSent, a.ConfirmationDelivered)
		}
	}
}

// A real refusal (400, 422) can never succeed: it is poisoned at once, after
// one call, not retried until an operator notices.
func TestProviderRefusalIsPoisoned(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusBadRequest, http.StatusUnprocessableEntity} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			brk := b.startRouter(t)
			if err := b.provider.SetControl(fakes.NotifierControl{FailNext: 100, FailStatus: status, RetryAfterS: 1}); err != nil {
				t.Fatal(err)
			}
			o := b.newOrder(t)
			if err := brk.Publisher.Publish(messages.TopicOrderConfirmed, outboxConfirmation(t, o)); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the poisoned confirmation", func() bool { return b.count(t, "SELECT count(*) FROM poison_messages") == 1 })
			time.Sleep(500 * time.Millisecond) // time for a retry or a redelivery to show up

			if calls := 100 - b.provider.Control().FailNext; calls != 1 {
				t.Errorf("provider called %d times, want 1: a refusal must not be retried", calls)
			}
			if n := b.count(t, "SELECT count(*) FROM poison_messages WHERE handler = 'order_confirmed' AND reason LIKE '%rejected%'"); n != 1 {
				t.Errorf("confirmation parked %d times as rejected by the provider, want 1", n)
			}
			if a := b.audit(t, o.ID); a.ExecutionsOrderConfirmed != 1 || a.NotificationSent != 0 || a.ConfirmationDelivered != 0 {
				t.Errorf("executions=%d notification_sent=%d confirmation_delivered=%d, want 1, 0, 0",
					a.ExecutionsOrderConfirmed, a.NotificationSent, a.ConfirmationDelivered)
			}
		})
	}
}

// The handler waits the provider's Retry-After before it fails, so the
// router's retry comes when the provider asked, and a longer Retry-After
// than the delivery has left ends with the delivery.
func TestNotNowWaitsRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		retryAfterS int
		deadline    time.Duration // of the delivery's context
		atLeast     time.Duration
		atMost      time.Duration
	}{
		{"as asked", 1, time.Minute, time.Second, 3 * time.Second},
		{"no longer than the delivery", 3600, 300 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			if err := b.provider.SetControl(fakes.NotifierControl{FailNext: 1, FailStatus: http.StatusTooManyRequests, RetryAfterS: tt.retryAfterS}); err != nil {
				t.Fatal(err)
			}
			msg := outboxConfirmation(t, b.newOrder(t)).Copy()
			ctx, cancel := context.WithTimeout(context.Background(), tt.deadline)
			defer cancel()
			msg.SetContext(ctx)

			start := time.Now()
			err := b.c.HandleOrderConfirmed(msg)
			took := time.Since(start)
			var nn *notify.NotNowError
			if !errors.As(err, &nn) || consumer.IsPermanent(err) {
				t.Fatalf("err = %v, want a transient NotNowError", err)
			}
			if took < tt.atLeast || took > tt.atMost {
				t.Errorf("handler took %s, want %s to %s", took, tt.atLeast, tt.atMost)
			}
		})
	}
}
