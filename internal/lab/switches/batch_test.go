package switches_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/outbox"
)

// memPublisher is a broker in memory: what was published, in order.
type memPublisher struct {
	mu   sync.Mutex
	sent []string // topic/uuid
}

func (p *memPublisher) Publish(topic string, msgs ...*message.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		p.sent = append(p.sent, topic+"/"+m.UUID)
	}
	return nil
}

func (p *memPublisher) Close() error { return nil }

func (p *memPublisher) published() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sent)
}

// consumerGuardNames are the guards whose mistakes the consumers' wiring
// puts in a field.
func consumerGuardNames(t *testing.T) (consumerGuards, others []string) {
	t.Helper()
	for _, name := range switches.Names() {
		if slices.ContainsFunc(changed(t, switches.Without(name)), func(f changedField) bool { return strings.HasPrefix(f.field, "consumer.") }) {
			consumerGuards = append(consumerGuards, name)
		} else {
			others = append(others, name)
		}
	}
	if len(consumerGuards) == 0 || len(others) == 0 {
		t.Fatalf("consumer guards %v, others %v: want some of each", consumerGuards, others)
	}
	return consumerGuards, others
}

// batchRecorder is a batch handler and a per-message handler that record
// their calls; the per-message one fails the messages of fail.
type batchRecorder struct {
	calls []string // "batch:a,b" or "one:a"
	fail  map[string]bool
}

func (r *batchRecorder) batch(msgs []*message.Message) []error {
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.UUID)
	}
	r.calls = append(r.calls, "batch:"+strings.Join(ids, ","))
	return make([]error, len(msgs))
}

func (r *batchRecorder) one(m *message.Message) error {
	r.calls = append(r.calls, "one:"+m.UUID)
	if r.fail[m.UUID] {
		return fmt.Errorf("message %s failed", m.UUID)
	}
	return nil
}

func newBatch(ids ...string) []*message.Message {
	msgs := make([]*message.Message, len(ids))
	for i, id := range ids {
		msgs[i] = message.NewMessage(id, []byte(`{}`))
	}
	return msgs
}

// With every consumer guard on, Batches calls the batch handler; with one
// off (from the start, or switched at run time), the per-message handler,
// once per message, in order, each message's error at its place; the nil
// set always calls the batch handler.
func TestBatches(t *testing.T) {
	t.Parallel()
	consumerGuards, others := consumerGuardNames(t)
	msgs := func() []*message.Message { return newBatch("a", "b", "c") }
	wantBatch := []string{"batch:a,b,c"}
	wantOne := []string{"one:a", "one:b", "one:c"}
	run := func(t *testing.T, s *switches.Set, want []string) {
		t.Helper()
		r := &batchRecorder{fail: map[string]bool{"b": true}}
		errs := switches.Batches(s, r.batch, r.one)(msgs())
		if !slices.Equal(r.calls, want) {
			t.Errorf("calls = %v, want %v", r.calls, want)
		}
		if len(errs) != 3 {
			t.Fatalf("%d errors for 3 messages", len(errs))
		}
		if slices.Equal(want, wantOne) && (errs[0] != nil || errs[1] == nil || errs[2] != nil) {
			t.Errorf("errors = %v, want only b's", errs)
		}
	}

	t.Run("nil set", func(t *testing.T) { run(t, nil, wantBatch) })
	t.Run("every guard on", func(t *testing.T) { run(t, switches.Without(), wantBatch) })
	t.Run("live, every guard on", func(t *testing.T) { run(t, (*switches.Set)(nil).Live(), wantBatch) })
	for _, name := range others {
		t.Run("without "+name+" (no consumer's)", func(t *testing.T) { run(t, switches.Without(name), wantBatch) })
	}
	for _, name := range consumerGuards {
		t.Run("without "+name, func(t *testing.T) { run(t, switches.Without(name), wantOne) })
	}

	t.Run("live, switched", func(t *testing.T) {
		live := (*switches.Set)(nil).Live()
		r := &batchRecorder{}
		handle := switches.Batches(live, r.batch, r.one)
		handle(newBatch("a", "b"))
		mustSwitch(t, live, effect.GuardLedgerKey, true)
		handle(newBatch("c", "d"))
		mustSwitch(t, live, effect.GuardLedgerKey, false)
		handle(newBatch("e"))
		if want := []string{"batch:a,b", "one:c", "one:d", "batch:e"}; !slices.Equal(r.calls, want) {
			t.Errorf("calls = %v, want %v", r.calls, want)
		}
	})

	// Each message's run is held: the outbox's mistake publishes a
	// message's output once it returned nil, and drops a failed one's.
	t.Run("without outbox, each run held", func(t *testing.T) {
		pub := &memPublisher{}
		publish := outbox.PublishAfterCommit(pub)
		one := func(m *message.Message) error {
			if err := publish(m.Context(), nil, "order_confirmed", message.NewMessage("confirm-"+m.UUID, nil)); err != nil {
				return err
			}
			if m.UUID == "b" {
				return errors.New("b failed after its publish")
			}
			return nil
		}
		batch := func([]*message.Message) []error { t.Error("the batch handler ran with the outbox off"); return nil }
		errs := switches.Batches(switches.Without(effect.GuardOutbox), batch, one)(msgs())
		if errs[0] != nil || errs[1] == nil || errs[2] != nil {
			t.Errorf("errors = %v, want only b's", errs)
		}
		if got, want := pub.published(), []string{"order_confirmed/confirm-a", "order_confirmed/confirm-c"}; !slices.Equal(got, want) {
			t.Errorf("published %v, want %v", got, want)
		}
	})
}

// HoldAfterCommit holds what the outbox's mistake is given during a run of
// the handler: published once the handler returned nil, and never when it
// returned an error. Without a hold, the mistake refuses.
func TestHoldAfterCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		err     error
		publish []string
	}{
		{"the handler returned nil", nil, []string{"order_confirmed/out-1", "order_confirmed/out-2"}},
		{"the handler failed", errors.New("the commit failed"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pub := &memPublisher{}
			// The field the lab wires with the outbox off, with pub as its
			// broker.
			enqueue := switches.Consumers(consumer.NewConsumers(nil, nil), switches.Without(effect.GuardOutbox), pub).Guards().Enqueue
			var during []string
			h := switches.HoldAfterCommit(func(msg *message.Message) ([]*message.Message, error) {
				if err := enqueue(msg.Context(), nil, "order_confirmed", message.NewMessage("out-1", nil), message.NewMessage("out-2", nil)); err != nil {
					return nil, err
				}
				during = pub.published()
				return nil, tc.err
			})
			_, err := h(message.NewMessage("in", nil))
			if !errors.Is(err, tc.err) {
				t.Errorf("handler = %v, want %v", err, tc.err)
			}
			if len(during) != 0 {
				t.Errorf("published %v before the handler returned", during)
			}
			if got := pub.published(); !slices.Equal(got, tc.publish) {
				t.Errorf("published %v, want %v", got, tc.publish)
			}
		})
	}

	pub := &memPublisher{}
	err := outbox.PublishAfterCommit(pub)(context.Background(), nil, "order_confirmed", message.NewMessage("out", nil))
	if err == nil || !strings.Contains(err.Error(), "outbox.Hold") {
		t.Errorf("the mistake without a hold = %v, want an error naming outbox.Hold", err)
	}
	if got := pub.published(); len(got) != 0 {
		t.Errorf("the mistake without a hold published %v", got)
	}
}

// HoldWhileOutboxOff holds a run only while the outbox's guard is off: with
// it on, the outbox's mistake would find no hold (a run that goes through
// nothing of the lab's); switched off, the run holds and sends after it.
func TestHoldWhileOutboxOff(t *testing.T) {
	s := (*switches.Set)(nil).Live()
	pub := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	defer pub.Close()
	var held bool
	h := switches.HoldWhileOutboxOff(s)(func(msg *message.Message) ([]*message.Message, error) {
		held = outbox.PublishAfterCommit(pub)(msg.Context(), nil, "t", message.NewMessage("m", nil)) == nil
		return nil, nil
	})
	if _, err := h(message.NewMessage("1", nil)); err != nil || held {
		t.Fatalf("outbox guard on: held=%v err=%v, want the run not held", held, err)
	}
	if err := s.Switch(effect.GuardOutbox, true); err != nil {
		t.Fatal(err)
	}
	if _, err := h(message.NewMessage("2", nil)); err != nil || !held {
		t.Fatalf("outbox guard off: held=%v err=%v, want the run held", held, err)
	}
}
