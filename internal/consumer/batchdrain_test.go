package consumer_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/poison"
)

// A batch in flight when the loop stops may go on for Drain; then its
// messages' contexts are cancelled, so a handler stuck on a slow provider
// gives up, the loop returns, and the message is read again: a deploy
// never waits for the slowest call, nor kills the worker mid-batch.
func TestBatchLoopCutsABatchInFlightAfterTheDrain(t *testing.T) {
	t.Parallel()
	const topic, group = "bulkdrain", "bulkdrain_group"
	pool, _ := pgtest.NewDatabase(t)
	b := postgresBroker(t, pool, topic, group)
	var msgs []*message.Message
	for i := range 3 {
		msgs = append(msgs, message.NewMessage(fmt.Sprintf("msg-%d", i), []byte(`{}`)))
	}
	if err := b.Publisher.Publish(topic, msgs...); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	// The first message is quick; the second waits on a provider that
	// never answers, until its context ends.
	handle := func(msgs []*message.Message) []error {
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			if i == 0 {
				continue
			}
			select {
			case started <- struct{}{}:
			default:
			}
			<-m.Context().Done()
			errs[i] = fmt.Errorf("provider call: %w", m.Context().Err())
		}
		return errs
	}
	reader := broker.NewBatchReader(pool, topic, group, 10)
	ctx, stop := context.WithCancel(t.Context())
	loop := &consumer.BatchLoop{
		Reader: reader, Topic: topic, Group: group, Handle: handle,
		Poison: poison.NewStore(queries.New(pool)), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Poll: 10 * time.Millisecond, Backoff: 10 * time.Millisecond, Drain: 200 * time.Millisecond,
	}
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	select {
	case <-started:
	case <-time.After(90 * time.Second): // the server-wide visibility rule, see bulk_worker_test.go
		t.Fatal("no batch within 90s")
	}
	stopped := time.Now()
	stop()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the loop did not return within 30s of its stop: the batch in flight was never cut")
	}
	if took := time.Since(stopped); took < 200*time.Millisecond {
		t.Errorf("the loop returned %s after its stop, before the 200ms drain", took)
	}
	// The first message settled; the cut one and the one after it come again.
	var again []string
	if _, _, err := reader.Read(context.Background(), func(m []*message.Message) int {
		for _, x := range m {
			again = append(again, x.UUID)
		}
		return len(m)
	}); err != nil {
		t.Fatal(err)
	}
	if len(again) != 2 || again[0] != "msg-1" || again[1] != "msg-2" {
		t.Errorf("read again %v, want [msg-1 msg-2]", again)
	}
}
