package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/labqueries"
)

// Notifications fetches what the fake provider really sent (GET /notifications).
func Notifications(ctx context.Context, fakesURL string) ([]fakes.Notification, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fakesURL+"/notifications", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read the provider's notifications (is `orderpaid-lab fakes` running?): %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/notifications: %s", fakesURL, resp.Status)
	}
	var out []fakes.Notification
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decode the provider's notifications: %w", err)
	}
	return out, nil
}

// WaitNotified waits until the provider has sent a notification for every
// order in want, polling the cheap count in the database first and the
// provider's list only when the count says it may be complete. It returns
// the provider's list.
func WaitNotified(ctx context.Context, pool *pgxpool.Pool, fakesURL string, want map[uuid.UUID]bool, timeout time.Duration) ([]fakes.Notification, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	q := labqueries.New(pool)
	missing := len(want)
	for {
		n, err := q.BenchNotificationCount(ctx)
		if err == nil && n >= int64(len(want)) {
			sent, err := Notifications(ctx, fakesURL)
			if err != nil {
				return nil, err
			}
			missing = len(want)
			for id := range notifiedOrders(sent) {
				if want[id] {
					missing--
				}
			}
			if missing == 0 {
				return sent, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d orders not notified within %s (provider calls logged: %d): the pipeline is stuck or too slow; see the worker log",
				missing, len(want), timeout, n)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// notifiedOrders counts the provider's notifications per order.
func notifiedOrders(sent []fakes.Notification) map[uuid.UUID]int {
	out := make(map[uuid.UUID]int, len(sent))
	for _, n := range sent {
		if id, err := uuid.Parse(n.OrderID); err == nil {
			out[id]++
		}
	}
	return out
}

// Histogram is a Prometheus histogram: cumulative counts per upper bound.
type Histogram struct {
	Bounds []float64 // ascending upper bounds, +Inf last
	Counts []float64 // cumulative counts, one per bound
}

// ScrapeHistogram reads the histogram called name from each /metrics URL
// and adds them up over every label set (both relay topics, every worker).
func ScrapeHistogram(ctx context.Context, urls []string, name string) (Histogram, error) {
	sums := map[float64]float64{}
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return Histogram{}, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return Histogram{}, fmt.Errorf("scrape %s: %w", u, err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, name+"_bucket{") {
				continue
			}
			le, ok := label(line, "le")
			fields := strings.Fields(line)
			if !ok || len(fields) < 2 {
				continue
			}
			bound, err1 := strconv.ParseFloat(le, 64)
			count, err2 := strconv.ParseFloat(fields[len(fields)-1], 64)
			if err1 == nil && err2 == nil {
				sums[bound] += count
			}
		}
		resp.Body.Close()
	}
	var h Histogram
	for b := range sums {
		h.Bounds = append(h.Bounds, b)
	}
	sortFloats(h.Bounds)
	for _, b := range h.Bounds {
		h.Counts = append(h.Counts, sums[b])
	}
	return h, nil
}

// label returns the value of one label in a Prometheus text line.
func label(line, name string) (string, bool) {
	_, rest, ok := strings.Cut(line, name+`="`)
	if !ok {
		return "", false
	}
	v, _, ok := strings.Cut(rest, `"`)
	return v, ok
}

// Quantile estimates the q-quantile (0..1) the way Prometheus's
// histogram_quantile does: find the bucket, interpolate linearly inside it.
// It returns 0 for an empty histogram and the largest finite bound when the
// quantile falls in the +Inf bucket.
func (h Histogram) Quantile(q float64) time.Duration {
	if len(h.Counts) == 0 || h.Counts[len(h.Counts)-1] == 0 {
		return 0
	}
	rank := q * h.Counts[len(h.Counts)-1]
	lower, below := 0.0, 0.0
	for i, c := range h.Counts {
		if c >= rank {
			upper := h.Bounds[i]
			if upper > 1e300 { // +Inf
				return seconds(lower)
			}
			return seconds(lower + (upper-lower)*(rank-below)/(c-below))
		}
		lower, below = h.Bounds[i], c
	}
	return seconds(lower)
}

// Count is the number of observations.
func (h Histogram) Count() int64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return int64(h.Counts[len(h.Counts)-1])
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
