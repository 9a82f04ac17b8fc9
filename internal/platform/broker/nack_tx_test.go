package broker_test

// Does a nack roll back?
//
// The postgres broker's subscriber (NewPostgresSubscriber, watermill-sql's
// subscriber underneath) hands each message out inside the transaction that
// read it and moves the group's position in it; the message's context carries
// that transaction (wsql.TxFromContext). A handler could write its effect
// through it, hoping that the effect commits exactly when the message is
// acked. It does not roll back on a nack: the subscriber keeps the
// transaction open, waits ResendInterval and hands the same message out
// again, in the same transaction, so a write made before the nack is still
// there when the redelivery writes again, and both commit with the ack. And
// when the subscriber closes while the message is nacked, the transaction
// commits without moving the position: the write stays, and the message is
// handed out again later. These tests show both.
//
// This project's handlers never write through that transaction: every
// handler (internal/consumer) opens its own transactions on the pool and
// protects each effect with its own guard, so what a nack leaves behind is
// the handler's own committed work, and the redelivery meets the guard.
// That is tested where the guards are: TestPartialFailureIsCompletedByTheRedelivery
// and TestTransientFailureIsRetried (internal/consumer) nack after step 1
// committed, and every effect is still 1 after the redelivery.
// TestOwnTransactionSurvivesANack below shows the same shape on a bare table.

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// nackSetup is a postgres broker on its own database, with a table
// nack_writes(message_uuid) for the handler's effect.
func nackSetup(t *testing.T) (bundle, *pgxpool.Pool) {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	b, err := broker.New(t.Context(), config.Config{Broker: config.BrokerPostgres}, pool, watermill.NopLogger{})
	if err != nil {
		t.Fatalf("connect to postgres broker: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	bb := bundle{b: b, topic: "nacktest"}
	if _, err := pool.Exec(t.Context(), `CREATE TABLE nack_writes (message_uuid text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return bb, pool
}

// writeThroughSubscriberTx inserts one nack_writes row through the
// transaction the subscriber put in msg's context.
func writeThroughSubscriberTx(t *testing.T, msg *message.Message) {
	t.Helper()
	tx, ok := wsql.TxFromContext(msg.Context())
	if !ok {
		t.Fatal("the message's context carries no watermill-sql transaction")
	}
	if _, err := tx.ExecContext(msg.Context(), `INSERT INTO nack_writes (message_uuid) VALUES ($1)`, msg.UUID); err != nil {
		t.Fatalf("write through the subscriber's transaction: %v", err)
	}
}

func countWrites(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM nack_writes`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A handler writes through the subscriber's transaction and nacks; the
// redelivery writes again and acks. Both rows commit: the nack rolled
// nothing back.
func TestNackDoesNotRollBackTheSubscriberTransaction(t *testing.T) {
	t.Parallel()
	bb, pool := nackSetup(t)
	_, ch := bb.subscribe(t, t.Context(), "nacktest_group")
	sent := bb.publish(t, 1)[0]

	first := receive(t, ch)
	writeThroughSubscriberTx(t, first)
	first.Nack()

	again := receive(t, ch)
	if again.UUID != sent.UUID {
		t.Fatalf("redelivered %s, want %s", again.UUID, sent.UUID)
	}
	firstTx, _ := wsql.TxFromContext(first.Context())
	if tx, _ := wsql.TxFromContext(again.Context()); tx != firstTx {
		t.Errorf("the redelivery came in another transaction: the nack did end the first one")
	}
	writeThroughSubscriberTx(t, again)
	again.Ack()

	waitRows(t, pool, 2)
	time.Sleep(300 * time.Millisecond) // a rolled-back write would not come back; a third delivery would show
	if n := countWrites(t, pool); n != 2 {
		t.Fatalf("nack_writes = %d after a nack and an ack, want 2 (no rollback on nack)", n)
	}
}

// A handler writes through the subscriber's transaction and nacks, and the
// subscriber closes before any redelivery is acked: the transaction commits
// with the write, the position does not move, and the next member of the
// group gets the message again.
func TestClosingAfterANackCommitsTheWrite(t *testing.T) {
	t.Parallel()
	bb, pool := nackSetup(t)
	sub, ch := bb.subscribe(t, t.Context(), "nacktest_group")
	sent := bb.publish(t, 1)[0]

	first := receive(t, ch)
	writeThroughSubscriberTx(t, first)
	first.Nack()
	if err := sub.Close(); err != nil {
		t.Fatalf("close subscriber: %v", err)
	}
	waitRows(t, pool, 1)

	_, ch2 := bb.subscribe(t, t.Context(), "nacktest_group")
	again := receive(t, ch2)
	if again.UUID != sent.UUID {
		t.Fatalf("next member got %s, want %s again", again.UUID, sent.UUID)
	}
	writeThroughSubscriberTx(t, again)
	again.Ack()
	waitRows(t, pool, 2)
}

// What this project does: the handler commits its effect in a transaction of
// its own, guarded by a key, and nacks. The committed write survives the
// nack, and the redelivery's write meets the guard: one row.
func TestOwnTransactionSurvivesANack(t *testing.T) {
	t.Parallel()
	bb, pool := nackSetup(t)
	if _, err := pool.Exec(t.Context(), `ALTER TABLE nack_writes ADD PRIMARY KEY (message_uuid)`); err != nil {
		t.Fatal(err)
	}
	_, ch := bb.subscribe(t, t.Context(), "nacktest_group")
	bb.publish(t, 1)

	write := func(msg *message.Message) {
		t.Helper()
		if _, err := pool.Exec(msg.Context(), `INSERT INTO nack_writes (message_uuid) VALUES ($1) ON CONFLICT DO NOTHING`, msg.UUID); err != nil {
			t.Fatal(err)
		}
	}
	first := receive(t, ch)
	write(first)
	first.Nack()
	if n := countWrites(t, pool); n != 1 {
		t.Fatalf("nack_writes = %d after the nack, want 1: the handler's own commit stays", n)
	}
	again := receive(t, ch)
	write(again)
	again.Ack()
	time.Sleep(300 * time.Millisecond)
	if n := countWrites(t, pool); n != 1 {
		t.Fatalf("nack_writes = %d after the redelivery, want 1: the guard absorbs it", n)
	}
}

// waitRows waits until nack_writes holds want rows, visible outside the
// subscriber's transaction (so committed).
func waitRows(t *testing.T, pool *pgxpool.Pool, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for countWrites(t, pool) != want {
		if time.Now().After(deadline) {
			t.Fatalf("nack_writes = %d, want %d committed", countWrites(t, pool), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
