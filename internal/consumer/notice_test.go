package consumer_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// forgetEverything is what time does to the e-mail's memories: the
// consumer inbox's rows of the order are past their window and cleaned,
// and the provider has forgotten its keys.
func (b *bundle) forgetEverything(t *testing.T, orderID uuid.UUID) {
	t.Helper()
	if _, err := b.pool.Exec(context.Background(), "DELETE FROM consumer_inbox WHERE order_id = $1", orderID); err != nil {
		t.Fatal(err)
	}
	b.provider.ForgetKeys()
}

// TestEmailOncePerOrderPastEveryMemory: a confirmation replayed after the
// inbox's window and the provider's key memory (a relay switch, a Kafka
// group whose offsets expired, a late reprocess), and a confirmation under
// another message id, find the order's e-mail claim settled: one e-mail.
// Without the claim (--without notification-claim) each is another e-mail.
func TestEmailOncePerOrderPastEveryMemory(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		off  *switches.Set
		want int
	}{
		{"with the claim", nil, 1},
		{"without the claim", switches.Without(effect.GuardNotificationClaim), 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.off)
			o := b.newOrder(t)
			msg := outboxConfirmation(t, o)
			if err := deliver(b.c.HandleOrderConfirmed, msg); err != nil {
				t.Fatal(err)
			}
			b.forgetEverything(t, o.ID)
			if err := deliver(b.c.HandleOrderConfirmed, msg); err != nil {
				t.Fatalf("the replay past the inbox's window: %v", err)
			}
			other, err := messages.NewOrderConfirmed(o.ID)
			if err != nil {
				t.Fatal(err)
			}
			other.UUID = uuid.NewString() // another message asking for the same e-mail
			b.provider.ForgetKeys()
			if err := deliver(b.c.HandleOrderConfirmed, other); err != nil {
				t.Fatalf("another message for the order: %v", err)
			}
			if got := len(b.provider.Notifications()); got != tt.want {
				t.Errorf("provider sent %d e-mails, want %d", got, tt.want)
			}
		})
	}
}

// TestEmailWhoseOutcomeIsUnknownIsAskedFor: the e-mail went out and its
// holder died before settling its claim (the claim left sending, its lease
// run out), and the inbox and the provider's key have forgotten it. The
// redelivery takes the claim over and asks the provider first: it finds the
// e-mail and sends nothing. While the provider cannot say, nothing is sent
// and the delivery fails, to be retried.
func TestEmailWhoseOutcomeIsUnknownIsAskedFor(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := b.newOrder(t)
	msg := outboxConfirmation(t, o)
	if err := deliver(b.c.HandleOrderConfirmed, msg); err != nil {
		t.Fatal(err)
	}
	// What a crash between the call and the settle leaves.
	if _, err := b.pool.Exec(context.Background(), `UPDATE notification_claims
		SET state = 'sending', notification_id = NULL, locked_until = now() - interval '1 second' WHERE order_id = $1`, o.ID); err != nil {
		t.Fatal(err)
	}
	b.forgetEverything(t, o.ID)

	if err := b.provider.SetControl(fakes.NotifierControl{LookupFailNext: 1}); err != nil {
		t.Fatal(err)
	}
	if err := deliver(b.c.HandleOrderConfirmed, msg); err == nil {
		t.Fatal("the redelivery while the provider cannot say succeeded; want an error, to be retried")
	}
	if got := len(b.provider.Notifications()); got != 1 {
		t.Fatalf("provider sent %d e-mails while it could not say, want 1", got)
	}
	if err := deliver(b.c.HandleOrderConfirmed, msg); err != nil {
		t.Fatalf("the redelivery once the provider can say: %v", err)
	}
	if got := len(b.provider.Notifications()); got != 1 {
		t.Fatalf("provider sent %d e-mails, want 1: the look-up found the first", got)
	}
	var state, id string
	if err := b.pool.QueryRow(context.Background(), "SELECT state, coalesce(notification_id, '') FROM notification_claims WHERE order_id = $1 AND template = $2",
		o.ID, notify.TemplateOrderConfirmed).Scan(&state, &id); err != nil {
		t.Fatal(err)
	}
	if state != "sent" || id != b.provider.Notifications()[0].ID {
		t.Fatalf("claim = %s %q, want sent with the provider's id %s", state, id, b.provider.Notifications()[0].ID)
	}
}

// TestEmailClaimsOfABatchInOneTransaction: with the position committed with
// the effects, a batch's messages share one transaction, one connection.
// The batch takes and settles its e-mails' claims in one goroutine and
// calls the provider side by side: every e-mail once, no statement on the
// transaction from two goroutines at once (pgx: "conn busy").
func TestEmailClaimsOfABatchInOneTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var orders []queries.Order
	for range 6 {
		orders = append(orders, b.newOrder(t))
	}
	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	msgs := confirmedMessages(t, orders, []int{0, 1, 2, 3, 4, 5})
	for _, m := range msgs {
		m.SetContext(postgres.WithEnclosingTx(context.Background(), tx))
	}
	for i, err := range b.c.HandleOrderConfirmedBatch(msgs) {
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(b.provider.Notifications()); got != len(orders) {
		t.Fatalf("provider sent %d e-mails, want %d", got, len(orders))
	}
	var sent int
	if err := b.pool.QueryRow(ctx, "SELECT count(*) FROM notification_claims WHERE state = 'sent'").Scan(&sent); err != nil || sent != len(orders) {
		t.Fatalf("%d claims sent (%v), want %d", sent, err, len(orders))
	}
}

// TestEmailLoggedBeforeItsClaimIsSettled: the provider's answer is logged
// before the e-mail's claim is settled. A worker that sent the e-mail and
// could not log it (here the log's table is away; in the wild, a kill
// between the two) leaves the claim to be taken over: the redelivery asks
// the provider, finds the e-mail, logs it and sends nothing, so the audit
// counts the one e-mail. Settled first, the claim would answer "sent" to
// every redelivery and the log, the audit's source, would never have it.
func TestEmailLoggedBeforeItsClaimIsSettled(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	o := b.newOrder(t)
	msg := outboxConfirmation(t, o)
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, "ALTER TABLE notification_log RENAME TO notification_log_away"); err != nil {
		t.Fatal(err)
	}
	if err := deliver(b.c.HandleOrderConfirmed, msg); err == nil {
		t.Fatal("the delivery whose answer could not be logged succeeded; want an error")
	}
	if _, err := b.pool.Exec(ctx, "ALTER TABLE notification_log_away RENAME TO notification_log"); err != nil {
		t.Fatal(err)
	}
	if err := deliver(b.c.HandleOrderConfirmed, msg); err != nil {
		t.Fatalf("redelivery: %v", err)
	}
	if got := len(b.provider.Notifications()); got != 1 {
		t.Fatalf("provider sent %d e-mails, want 1", got)
	}
	if a := b.audit(t, o.ID); a.NotificationSent != 1 {
		t.Fatalf("audit notification_sent = %d, want 1: the log misses the e-mail its claim says was sent", a.NotificationSent)
	}
}
