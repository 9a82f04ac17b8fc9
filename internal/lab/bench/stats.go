package bench

import (
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
)

// Latencies are the end-to-end times of one run, sorted.
type Latencies []time.Duration

// EndToEnd pairs each order's acceptance (the 2xx of its first webhook) with
// the provider's sent_at of its first notification. Both clocks are this
// machine's. Orders without a notification are left out (the effects table
// reports them).
func EndToEnd(accepted map[uuid.UUID]time.Time, sent []fakes.Notification) (Latencies, time.Time) {
	first := make(map[uuid.UUID]time.Time, len(sent))
	var last time.Time
	for _, n := range sent {
		id, err := uuid.Parse(n.OrderID)
		if err != nil {
			continue
		}
		if t, ok := first[id]; !ok || n.SentAt.Before(t) {
			first[id] = n.SentAt
		}
		if n.SentAt.After(last) {
			last = n.SentAt
		}
	}
	out := make(Latencies, 0, len(accepted))
	for id, acc := range accepted {
		if t, ok := first[id]; ok {
			out = append(out, max(t.Sub(acc), 0))
		}
	}
	slices.Sort(out)
	return out, last
}

// Percentile returns the p-th percentile (0..100), nearest rank.
func (l Latencies) Percentile(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	i := int(p/100*float64(len(l))+0.5) - 1
	return l[min(max(i, 0), len(l)-1)]
}

func sortFloats(f []float64) { slices.Sort(f) }
