package consumer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

// InOneTransaction handles a batch message by message in one transaction:
// nothing of it is visible to anyone else until the batch commits, a
// message that fails is rolled back alone, and a batch whose commit is
// lost leaves nothing and answers the loss for every message.
func TestInOneTransaction(t *testing.T) {
	t.Parallel()
	bn := setup(t, nil)
	ctx := context.Background()
	if _, err := bn.pool.Exec(ctx, `CREATE TABLE handled (message_id text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	visible := func() int { return count(t, bn, `SELECT count(*) FROM handled`) }
	boom := errors.New("boom")
	cut := false
	before := 0 // rows committed before the batch
	handle := func(c *consumer.Consumers, m *message.Message) error {
		// Each message's step is its own InTx, as a handler's is.
		err := postgres.InTx(m.Context(), bn.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(m.Context(), `INSERT INTO handled VALUES ($1)`, m.UUID); err != nil {
				return err
			}
			if m.UUID == "bad" {
				return boom
			}
			return nil
		})
		if m.UUID == "m3" {
			if n := visible() - before; n != 0 {
				t.Errorf("while the batch runs, %d of its rows are visible outside it; want 0", n)
			}
			if tx, ok := postgres.EnclosingTx(m.Context()); cut && ok {
				_ = tx.Conn().Close(context.Background()) // the worker dies before the COMMIT
			}
		}
		return err
	}
	batch := func(ids ...string) []*message.Message {
		var msgs []*message.Message
		for _, id := range ids {
			msgs = append(msgs, message.NewMessage(id, nil))
		}
		return msgs
	}

	errs := consumer.InOneTransaction(handle)(bn.c, batch("m1", "bad", "m3"))
	if errs[0] != nil || !errors.Is(errs[1], boom) || errs[2] != nil {
		t.Fatalf("answers %v; want nil, boom, nil", errs)
	}
	if n := visible(); n != 2 {
		t.Errorf("after the commit %d rows, want 2 (m1 and m3; bad rolled back alone)", n)
	}

	cut, before = true, 2
	errs = consumer.InOneTransaction(handle)(bn.c, batch("m4", "m5", "m3x", "m3"))
	for i, err := range errs {
		if err == nil {
			t.Errorf("message %d answered nil after a lost commit; want an error", i)
		}
	}
	if n := visible(); n != 2 {
		t.Errorf("after a lost commit %d rows, want still 2", n)
	}
}
