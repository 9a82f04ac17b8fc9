package broker_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// A kafka batch source hands out the group's records several at a time,
// in order (here one order, so one partition), and commits only those the
// handler settled: the rest come again, first, in a later batch. When the
// loop stops, the group has committed every record.
func TestKafkaBatchReadsInOrderAndCommitsOnlySettled(t *testing.T) {
	t.Parallel()
	const group = "g"
	brokers := kafkaBrokers(t)
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, group)
	order := watermill.NewUUID()
	var want []string
	for _, m := range bb.publishFor(t, slices.Repeat([]string{order}, 25)...) {
		want = append(want, m.UUID)
	}
	src, err := bb.b.BatchReader(bb.topic, group, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%T", src); got != "*broker.kafkaBatchSource" {
		t.Fatalf("BatchReader on kafka returned %s", got)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var got []string
	var sizes []int
	var uncommittedAfterFirst int64
	src.Loop(ctx, 0, 10*time.Millisecond, func(msgs []*message.Message) int {
		sizes = append(sizes, len(msgs))
		done := len(msgs)
		switch len(sizes) {
		case 1:
			done = min(7, done) // the first batch settles 7 only
		case 2:
			uncommittedAfterFirst = kafkaUnread(t, brokers, "", bb.topic, group)
		}
		for _, m := range msgs[:done] {
			got = append(got, m.UUID)
		}
		if len(got) >= len(want) {
			cancel() // this batch is still committed: stopping never cuts one in half
		}
		return done
	}, func(err error) { t.Errorf("read failed: %v", err) })

	if !slices.Equal(got, want) {
		t.Fatalf("settled in this order (batches of %v):\n%v\nwant\n%v", sizes, got, want)
	}
	if slices.Max(sizes) < 2 {
		t.Errorf("batches of %v: never more than one message at a time", sizes)
	}
	if uncommittedAfterFirst != 25-7 {
		t.Errorf("after a first batch settling 7, %d record(s) uncommitted, want 18", uncommittedAfterFirst)
	}
	if n := kafkaUnread(t, brokers, "", bb.topic, group); n != 0 {
		t.Errorf("after the loop, %d record(s) uncommitted, want 0", n)
	}
	t.Logf("batches of %v", sizes)
}

// A source that dies with a batch in hand, before its commit (its handler
// panics: the process would crash), loses nothing: the group's next member,
// a second source, reads the whole batch again, on every partition.
func TestKafkaBatchCrashMidBatchLosesNothing(t *testing.T) {
	t.Parallel()
	const group = "g"
	brokers := kafkaBrokers(t)
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, group)
	want := map[string]bool{}
	for _, m := range bb.publish(t, 12) { // twelve orders: every partition
		want[m.UUID] = true
	}

	func() {
		src, err := bb.b.BatchReader(bb.topic, group, 100)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if r := recover(); r != "crash" {
				t.Fatalf("recovered %v, want the handler's crash", r)
			}
		}()
		src.Loop(t.Context(), 0, 0, func(msgs []*message.Message) int {
			panic("crash")
		}, func(err error) { t.Errorf("read failed: %v", err) })
	}()

	src, err := bb.b.BatchReader(bb.topic, group, 100)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	got := map[string]bool{}
	src.Loop(ctx, 0, 0, func(msgs []*message.Message) int {
		for _, m := range msgs {
			got[m.UUID] = true
		}
		if len(got) >= len(want) {
			cancel()
		}
		return len(msgs)
	}, func(err error) { t.Errorf("read failed: %v", err) })
	if !maps.Equal(got, want) {
		t.Fatalf("after the crash read %d of the %d messages", len(got), len(want))
	}
}

// A batch source yields exactly what the per-message subscriber yields for
// the same message (here read by two groups): UUID, payload and metadata,
// trace context and order_id included. A per-message member and a batch
// member of one group share its offsets (a switch of mode resumes).
func TestKafkaBatchYieldsWhatTheSubscriberYields(t *testing.T) {
	t.Parallel()
	brokers := kafkaBrokers(t)
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, "single")
	bb.provision(t, "batch")
	bb.publish(t, 1)
	sub, ch := bb.subscribe(t, t.Context(), "single")
	single := receive(t, ch)
	single.Ack()
	if err := sub.Close(); err != nil { // commits the ack, leaves the group
		t.Fatal(err)
	}

	read := func(group string) []*message.Message {
		src, err := bb.b.BatchReader(bb.topic, group, 10)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var batch []*message.Message
		src.Loop(ctx, 0, 0, func(msgs []*message.Message) int {
			batch = msgs
			cancel()
			return len(msgs)
		}, func(err error) { t.Errorf("read failed: %v", err) })
		return batch
	}
	batched := read("batch")
	if len(batched) != 1 {
		t.Fatalf("the batch source read %d messages, want 1", len(batched))
	}
	if b := batched[0]; b.UUID != single.UUID || string(b.Payload) != string(single.Payload) ||
		!maps.Equal(b.Metadata, single.Metadata) || b.Metadata.Get("traceparent") == "" {
		t.Errorf("batch source yields %s %s %v\nthe subscriber %s %s %v",
			b.UUID, b.Payload, b.Metadata, single.UUID, single.Payload, single.Metadata)
	}

	later := bb.publish(t, 1)[0]
	if got := read("single"); len(got) != 1 || got[0].UUID != later.UUID {
		t.Errorf("a batch member of the group the subscriber read read %v, want only %s", got, later.UUID)
	}
}

// A rebalance waits for the batch in hand: a second batch member joining
// while the first one's handler runs gets nothing until that batch is
// committed, then takes partitions from the committed offsets. No record
// is handed out twice.
func TestKafkaBatchRebalanceWaitsForTheBatchInHand(t *testing.T) {
	t.Parallel()
	const group = "g"
	brokers := kafkaBrokers(t)
	bb := kafkaSetup(t, brokers, "")
	bb.provision(t, group)
	want := map[string]bool{}
	for _, m := range bb.publish(t, 24) {
		want[m.UUID] = true
	}
	var loops sync.WaitGroup
	defer loops.Wait() // after cancel: no member outlives the test
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	type batch struct {
		member int
		ids    []string
		at     time.Time
	}
	batches := make(chan batch)
	release := make(chan struct{})
	loop := func(member, size int) {
		src, err := bb.b.BatchReader(bb.topic, group, size)
		if err != nil {
			t.Error(err)
			return
		}
		first := true
		src.Loop(ctx, 0, 0, func(msgs []*message.Message) int {
			var ids []string
			for _, m := range msgs {
				ids = append(ids, m.UUID)
			}
			select {
			case batches <- batch{member, ids, time.Now()}:
			case <-ctx.Done():
			}
			if member == 0 && first {
				first = false
				<-release // the first batch stays in hand
			}
			return len(msgs)
		}, func(err error) { t.Errorf("member %d: read failed: %v", member, err) })
	}
	loops.Go(func() { loop(0, 4) })
	b := <-batches // member 0 holds its first batch
	got := map[string]int{}
	for _, id := range b.ids {
		got[id]++
	}
	loops.Go(func() { loop(1, 4) })
	select {
	case b := <-batches:
		t.Fatalf("member %d read a batch while member 0 held its first one", b.member)
	case <-time.After(3 * time.Second):
	}
	released := time.Now()
	close(release)
	// A record every 20ms, each for an order of its own, until the second
	// member has read some and every record is read.
	perMember := [2]int{len(b.ids), 0}
	var second time.Duration
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for perMember[1] == 0 || len(got) < len(want) {
		select {
		case <-tick.C:
			if perMember[1] == 0 {
				want[bb.publish(t, 1)[0].UUID] = true
			}
		case b := <-batches:
			if b.member == 1 && second == 0 {
				second = b.at.Sub(released)
			}
			perMember[b.member] += len(b.ids)
			for _, id := range b.ids {
				got[id]++
			}
		case <-ctx.Done():
			t.Fatalf("read %d of %d records (members %v)", len(got), len(want), perMember)
		}
	}
	select {
	case b := <-batches:
		for _, id := range b.ids {
			got[id]++
		}
	case <-time.After(time.Second):
	}
	cancel()
	for id := range want {
		if got[id] != 1 {
			t.Errorf("record %s handed out %d times, want once", id, got[id])
		}
	}
	t.Logf("members read %v of %d records; the second member's first batch came %v after the first batch was released", perMember, len(want), second)
}
