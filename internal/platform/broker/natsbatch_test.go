package broker_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// A nats batch source hands out the group's messages in order, several at a
// time, and acks only those the handler settled: the rest come again, first,
// in a later batch. When the loop stops, the durable has every message
// acked and none pending.
func TestNATSBatchReadsInOrderAndAcksOnlySettled(t *testing.T) {
	t.Parallel()
	const group = "g"
	bb := setup(t, config.BrokerNATS, group)
	bb.provision(t, group)
	var want []string
	for _, m := range bb.publish(t, 25) {
		want = append(want, m.UUID)
	}
	src, err := bb.b.BatchReader(bb.topic, group, 10)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	var got []string
	var sizes []int
	src.Loop(ctx, 0, 10*time.Millisecond, func(msgs []*message.Message) int {
		sizes = append(sizes, len(msgs))
		done := len(msgs)
		if len(sizes) == 1 {
			done = min(7, done) // the first batch settles 7 only
		}
		for _, m := range msgs[:done] {
			got = append(got, m.UUID)
		}
		if len(got) >= len(want) {
			cancel() // this batch is still acked: stopping never cuts one in half
		}
		return done
	}, func(err error) { t.Errorf("read failed: %v", err) })

	if !slices.Equal(got, want) {
		t.Fatalf("settled in this order (batches of %v):\n%v\nwant\n%v", sizes, got, want)
	}
	if slices.Max(sizes) < 2 {
		t.Errorf("batches of %v: never more than one message at a time", sizes)
	}
	info := natsConsumer(t, bb.topic, group)
	if info.AckFloor.Stream != 25 || info.NumAckPending != 0 || info.NumPending != 0 {
		t.Errorf("after the loop: ack floor at stream seq %d, %d ack pending, %d not delivered; want 25, 0, 0",
			info.AckFloor.Stream, info.NumAckPending, info.NumPending)
	}
}

// A source that dies with a batch in hand, before any ack (its handler
// panics: the process would crash), loses nothing: the server sends the
// batch again when its AckWait ends, here to a second source.
//
// The durable gets an AckWait of 1s instead of natsAckWait (30s) to keep the
// test short. Naking on close would not test this: a crashed process sends
// no nak, only the server's AckWait brings its messages back.
func TestNATSBatchCrashMidBatchLosesNothing(t *testing.T) {
	t.Parallel()
	const group, ackWait = "g", time.Second
	bb := setup(t, config.BrokerNATS, group)
	bb.provision(t, group)
	setAckWait(t, bb.topic, group, ackWait)
	var want []string
	for _, m := range bb.publish(t, 5) {
		want = append(want, m.UUID)
	}

	crashed := time.Now()
	func() {
		src, err := bb.b.BatchReader(bb.topic, group, 10)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if r := recover(); r != "crash" {
				t.Fatalf("recovered %v, want the handler's crash", r)
			}
		}()
		src.Loop(t.Context(), 0, 0, func(msgs []*message.Message) int {
			crashed = time.Now()
			panic("crash")
		}, func(err error) { t.Errorf("read failed: %v", err) })
	}()

	src, err := bb.b.BatchReader(bb.topic, group, 10)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	var got []string
	src.Loop(ctx, 0, 0, func(msgs []*message.Message) int {
		if len(got) == 0 {
			if since := time.Since(crashed); since < ackWait*9/10 {
				t.Errorf("the batch came again %v after the crash, before its AckWait of %v: it was nak'd, not lost", since, ackWait)
			}
		}
		for _, m := range msgs {
			got = append(got, m.UUID)
		}
		if len(got) >= len(want) {
			cancel()
		}
		return len(msgs)
	}, func(err error) { t.Errorf("read failed: %v", err) })
	if !slices.Equal(got, want) {
		t.Fatalf("after the crash read %v, want %v", got, want)
	}
}

// On a nats Broker, BatchReader returns the nats batch source, which raises
// the durable's MaxAckPending (32) to the batch size: 50 waiting messages are
// handed out in one batch of 50.
func TestNATSBatchBrokerPathHandsOutMoreThanMaxAckPendingInOneBatch(t *testing.T) {
	t.Parallel()
	const group, size = "g", 50
	bb := setup(t, config.BrokerNATS, group)
	bb.provision(t, group)
	bb.publish(t, size)
	src, err := bb.b.BatchReader(bb.topic, group, size)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%T", src); got != "*broker.natsBatchSource" {
		t.Fatalf("BatchReader on nats returned %s", got)
	}
	if got := natsConsumer(t, bb.topic, group).Config.MaxAckPending; got != size {
		t.Errorf("MaxAckPending %d, want the batch size %d", got, size)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	var first int
	src.Loop(ctx, 0, 0, func(msgs []*message.Message) int {
		first = len(msgs)
		cancel()
		return len(msgs)
	}, func(err error) { t.Errorf("read failed: %v", err) })
	if first != size {
		t.Errorf("first batch of %d message(s), want all %d waiting", first, size)
	}
}

// A batch source yields exactly what the per-message subscriber yields for
// the same message (here read by two groups): UUID, payload and metadata,
// trace context and order_id included.
func TestNATSBatchYieldsWhatTheSubscriberYields(t *testing.T) {
	t.Parallel()
	bb := setup(t, config.BrokerNATS, "single", "batch")
	bb.provision(t, "single", "batch")
	bb.publish(t, 1)
	_, ch := bb.subscribe(t, t.Context(), "single")
	single := receive(t, ch)
	single.Ack()

	src, err := bb.b.BatchReader(bb.topic, "batch", 10)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	var batched *message.Message
	src.Loop(ctx, 0, 0, func(msgs []*message.Message) int {
		batched = msgs[0]
		cancel()
		return len(msgs)
	}, func(err error) { t.Errorf("read failed: %v", err) })
	if batched == nil {
		t.Fatal("the batch source read nothing")
	}
	if batched.UUID != single.UUID || string(batched.Payload) != string(single.Payload) ||
		!maps.Equal(batched.Metadata, single.Metadata) || batched.Metadata.Get("traceparent") == "" {
		t.Errorf("batch source yields %s %s %v\nthe subscriber %s %s %v",
			batched.UUID, batched.Payload, batched.Metadata, single.UUID, single.Payload, single.Metadata)
	}
}

// natsConsumer reports the state of a group's durable.
func natsConsumer(t *testing.T, topic, group string) *nats.ConsumerInfo {
	t.Helper()
	js := natsJS(t)
	info, err := js.ConsumerInfo(topic, topic+"_"+group)
	if err != nil {
		t.Fatalf("durable consumer of %s on %s: %v", group, topic, err)
	}
	return info
}

// setAckWait changes the AckWait of a group's durable.
func setAckWait(t *testing.T, topic, group string, d time.Duration) {
	t.Helper()
	cfg := natsConsumer(t, topic, group).Config
	cfg.AckWait = d
	if _, err := natsJS(t).UpdateConsumer(topic, &cfg); err != nil {
		t.Fatalf("set AckWait of %s_%s: %v", topic, group, err)
	}
}

// natsJS opens JetStream on a connection closed when the test ends.
func natsJS(t *testing.T) nats.JetStreamContext {
	t.Helper()
	nc, err := nats.Connect(natsURL())
	if err != nil {
		t.Fatalf("connect to NATS: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := nc.JetStream()
	if err != nil {
		t.Fatalf("open JetStream: %v", err)
	}
	return js
}
