package broker_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// The batch source on RabbitMQ hands out the group's queue in publish order,
// several at a time, and acks only what the handler settled: the rest come
// first in the next batch, and once all are settled the queue is empty.
func TestAMQPBatchReadsInOrderAndAcksOnlyTheSettled(t *testing.T) {
	t.Parallel()
	const group = "g"
	bb := setup(t, config.BrokerAMQP, group)
	bb.provision(t, group)
	want := uuids(bb.publish(t, 25))
	src, err := bb.b.BatchReader(bb.topic, group, 10)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var got, firstOfSecond []string
	var sizes []int
	stop := runBatchLoop(t.Context(), src, func(msgs []*message.Message) int {
		mu.Lock()
		defer mu.Unlock()
		n := len(msgs)
		if len(sizes) == 0 {
			n = min(7, len(msgs)-1) // hand at least one back
		}
		if len(sizes) == 1 {
			firstOfSecond = []string{msgs[0].UUID, msgs[0].Metadata.Get(amqp.MetadataRedeliveredKey)}
		}
		sizes = append(sizes, len(msgs))
		for _, m := range msgs[:n] {
			got = append(got, m.UUID)
		}
		return n
	}, func(err error) { t.Errorf("read failed: %v", err) })
	waitFor(t, "all 25 settled", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= len(want) })
	stop()

	if !slices.Equal(got, want) {
		t.Fatalf("settled in this order:\n%v\nwant\n%v", got, want)
	}
	t.Logf("batch sizes %v", sizes)
	if slices.Max(sizes) < 2 {
		t.Errorf("batch sizes %v: none had more than one message", sizes)
	}
	if len(firstOfSecond) != 2 || firstOfSecond[0] != got[min(7, sizes[0]-1)] || firstOfSecond[1] != "true" {
		t.Errorf("second batch began with %v, want the first handed back, redelivered", firstOfSecond)
	}
	if ready, consumers := amqpQueueState(t, bb.topic+"_"+group); ready != 0 || consumers != 0 {
		t.Errorf("after the loop: %d message(s) in the queue, %d consumer(s); want none", ready, consumers)
	}
}

// Stopping while a batch is handled finishes it and acks it before the
// connection closes: nothing of it comes again.
func TestAMQPBatchStoppingMidBatchFinishesAndAcksIt(t *testing.T) {
	t.Parallel()
	const group = "g"
	bb := setup(t, config.BrokerAMQP, group)
	bb.provision(t, group)
	want := uuids(bb.publish(t, 5))
	src, err := bb.b.BatchReader(bb.topic, group, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	ctx, shutdown := context.WithCancel(t.Context())
	stop := runBatchLoop(ctx, src, func(msgs []*message.Message) int {
		shutdown() // SIGTERM while the batch is applied
		time.Sleep(50 * time.Millisecond)
		got = append(got, uuids(msgs)...)
		return len(msgs)
	}, func(err error) { t.Errorf("read failed: %v", err) })
	waitFor(t, "the loop to stop", func() bool { return ctx.Err() != nil })
	stop()
	if !slices.Equal(got, want) {
		t.Fatalf("handled %v, want %v", got, want)
	}
	if ready, consumers := amqpQueueState(t, bb.topic+"_"+group); ready != 0 || consumers != 0 {
		t.Errorf("after stopping: %d message(s) in the queue, %d consumer(s); want none", ready, consumers)
	}
}

// A worker that dies mid-batch, its connection cut before any ack, loses
// nothing: RabbitMQ requeues the batch, and the next source reads the same
// messages again, in order, marked redelivered.
func TestAMQPBatchCrashMidBatchRepeatsTheBatch(t *testing.T) {
	t.Parallel()
	const group = "g"
	bb := setup(t, config.BrokerAMQP, group)
	bb.provision(t, group)
	want := uuids(bb.publish(t, 5))

	proxy := startTCPProxy(t)
	crashing := connectAMQP(t, proxy.url())
	proxy.spare()
	src, err := crashing.BatchReader(bb.topic, group, 10)
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	ctx, crash := context.WithCancel(context.Background())
	stop := runBatchLoop(ctx, src, func(msgs []*message.Message) int {
		first = uuids(msgs)
		proxy.cut() // the process dies here: no ack reaches RabbitMQ
		crash()
		return len(msgs)
	}, func(error) {})
	waitFor(t, "the crash", func() bool { return proxy.cuts() > 0 })
	stop()
	if !slices.Equal(first, want) {
		t.Fatalf("first batch %v, want %v", first, want)
	}

	again, err := bb.b.BatchReader(bb.topic, group, 10)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []*message.Message
	stop = runBatchLoop(t.Context(), again, func(msgs []*message.Message) int {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, msgs...)
		return len(msgs)
	}, func(err error) { t.Errorf("read failed: %v", err) })
	waitFor(t, "the batch again", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= len(want) })
	stop()
	if !slices.Equal(uuids(got), want) {
		t.Fatalf("after the crash read %v, want %v", uuids(got), want)
	}
	for _, m := range got {
		if m.Metadata.Get(amqp.MetadataRedeliveredKey) != "true" {
			t.Errorf("message %s not marked redelivered", m.UUID)
		}
	}
}

// A connection lost under a running Loop is reported, redialled after the
// backoff, and the batch it held comes again, first.
func TestAMQPBatchReconnectsAndRereadsTheLostBatch(t *testing.T) {
	t.Parallel()
	const group = "g"
	bb := setup(t, config.BrokerAMQP, group)
	bb.provision(t, group)
	want := uuids(bb.publish(t, 5))

	proxy := startTCPProxy(t)
	src, err := connectAMQP(t, proxy.url()).BatchReader(bb.topic, group, 10)
	proxy.spare()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reads [][]string
	var failures int
	stop := runBatchLoop(t.Context(), src, func(msgs []*message.Message) int {
		mu.Lock()
		defer mu.Unlock()
		reads = append(reads, uuids(msgs))
		if len(reads) == 1 {
			proxy.cut()
		}
		return len(msgs)
	}, func(error) { mu.Lock(); defer mu.Unlock(); failures++ })
	// The first batch holds what had reached the reader when it was formed
	// (all five, or the first few): after the cut, every message comes again,
	// that batch first, in order.
	waitFor(t, "the batch again", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reads) >= 2 && len(slices.Concat(reads[1:]...)) >= len(want)
	})
	stop()
	if failures == 0 {
		t.Error("the lost connection was not reported")
	}
	if first := reads[0]; len(first) == 0 || !slices.Equal(first, want[:len(first)]) || !slices.Equal(slices.Concat(reads[1:]...), want) {
		t.Errorf("reads %v, want a first batch of the first of %v, then all of them again in order", reads, want)
	}
}

// On an amqp Broker, BatchReader returns its batch source of the prefixed
// topic, and the messages it hands out are those published: UUID, payload,
// metadata.
func TestAMQPBatchThroughTheBroker(t *testing.T) {
	t.Parallel()
	const topic, group = "order_paid", "worker"
	requireServer(t, "RabbitMQ", amqpURL(), startRabbitMQ)
	prefix := "brokertest_" + tempdb.RandomHex(6) + "_"
	t.Cleanup(func() { deleteAMQPTopology(t, prefix+topic, []string{group}) })
	b, err := broker.New(t.Context(), config.Config{Broker: config.BrokerAMQP, AMQPURL: amqpURL(), BrokerPrefix: prefix}, nil, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	bb := bundle{b: b, topic: topic}
	bb.provision(t, group)
	sent := bb.publish(t, 3)

	src, err := b.BatchReader(topic, group, 3)
	if err != nil {
		t.Fatalf("BatchReader on amqp: %v", err)
	}
	var mu sync.Mutex
	var got []*message.Message
	stop := runBatchLoop(t.Context(), src, func(msgs []*message.Message) int {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, msgs...)
		return len(msgs)
	}, func(err error) { t.Errorf("read failed: %v", err) })
	waitFor(t, "3 messages", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= len(sent) })
	stop()
	if len(got) != len(sent) {
		t.Fatalf("read %d message(s), want %d", len(got), len(sent))
	}
	for i, m := range got {
		if !m.Equals(sent[i]) {
			t.Errorf("message %d: got %s %s %v, want %s %s %v", i, m.UUID, m.Payload, m.Metadata, sent[i].UUID, sent[i].Payload, sent[i].Metadata)
		}
	}
	if ready, _ := amqpQueueState(t, prefix+topic+"_"+group); ready != 0 {
		t.Errorf("%d message(s) left in the prefixed queue", ready)
	}
}

// runBatchLoop runs src.Loop (poll 20ms, backoff 10ms) until ctx ends or
// stop, which ends it and waits for it to return.
func runBatchLoop(ctx context.Context, src broker.BatchSource, handle func([]*message.Message) int, failed func(error)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		src.Loop(ctx, 20*time.Millisecond, 10*time.Millisecond, handle, failed)
	}()
	return func() { cancel(); <-returned }
}

// waitFor polls cond for up to 90s; on time out the test fails and goes
// on, so that its checks say what came instead.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("still waiting for %s after 90s", what)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func uuids(msgs []*message.Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.UUID
	}
	return ids
}
