package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/orderpaid/orderpaid/internal/platform/broker"
)

// A batch reader hands out the group's messages in order, several at a time,
// and moves the position past only those the handler settled: the rest come
// first in the next read. While one reader holds the position, another
// reads nothing (it does not wait, and it hands out no message twice).
func TestBatchReaderReadsInOrderAndMovesOnlyPastTheSettled(t *testing.T) {
	t.Parallel()
	const topic, group = "batchread", "g"
	pool, b := lanesSetup(t)
	if err := b.Provision(topic, group); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 25 {
		m := message.NewMessage(fmt.Sprintf("m%02d", i), []byte(`{}`))
		want = append(want, m.UUID)
		if err := b.Publisher.Publish(topic, m); err != nil { // one transaction each
			t.Fatal(err)
		}
	}
	r := broker.NewBatchReader(pool, topic, group, 10)
	ctx := context.Background()

	var got []string
	// The first read settles 7 of its 10. A row is readable only once every
	// transaction that began before it has ended, on the whole server (the
	// poll's rule): under a loaded test run a read may find nothing yet, so
	// empty reads are retried and do not count.
	settle := []int{7, 10, 10, 10}
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; len(got) < len(want) && i < len(settle); {
		if time.Now().After(deadline) {
			t.Fatalf("after 90s settled %v", got)
		}
		read, done, err := r.Read(ctx, func(msgs []*message.Message) int {
			if i == 0 {
				// Meanwhile a second member of the group reads nothing.
				other := broker.NewBatchReader(pool, topic, group, 10)
				n, _, err := other.Read(ctx, func(m []*message.Message) int {
					t.Errorf("a second reader got %d message(s) while the first held the position", len(m))
					return 0
				})
				if err != nil || n != 0 {
					t.Errorf("second reader: read %d, %v; want 0, nil", n, err)
				}
			}
			for _, m := range msgs[:min(settle[i], len(msgs))] {
				got = append(got, m.UUID)
			}
			return settle[i]
		})
		if err != nil {
			t.Fatal(err)
		}
		if read == 0 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if want := min(settle[i], read); done != want {
			t.Fatalf("read %d: done %d, want %d", i+1, done, want)
		}
		i++
	}
	if !slices.Equal(got, want) {
		t.Fatalf("settled in this order:\n%v\nwant\n%v", got, want)
	}
	if read, _, err := r.Read(ctx, func(m []*message.Message) int { return len(m) }); err != nil || read != 0 {
		t.Errorf("after the last: read %d, %v; want nothing", read, err)
	}
	var acked int64
	if err := pool.QueryRow(ctx, `SELECT offset_acked FROM "watermill_offsets_batchread" WHERE consumer_group = $1`, group).Scan(&acked); err != nil {
		t.Fatal(err)
	}
	if acked == 0 {
		t.Error("the position did not move")
	}
}
