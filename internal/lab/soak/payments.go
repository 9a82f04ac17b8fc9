package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/bench"
)

// The reconcile soak's customers: each order is created a moment before
// its customer pays it (so that reconcile's --grace means what it says: an
// order younger than that is in flight), then paid with POST
// /orders/{id}/payments under an Idempotency-Key of its own, as a client
// does.

// Payments counts what the customers saw.
type Payments struct {
	// Orders paid at the first request; after no answer, by a retry
	// (Retried, of which WaitedLease were told 409 in flight at least once:
	// they waited out the lease of the attempt the killed api held).
	FirstTry, Retried, WaitedLease int
	// GaveUp: the customer got no answer and did not try again.
	GaveUp int
	// Refused counts requests that never reached the api (connection
	// refused while it restarted) and were sent again at once.
	Refused int
}

// customer pays one order and says how it went.
type customer struct {
	api     string
	client  *http.Client
	giveUp  bool          // gives up after a request that got no answer
	timeout time.Duration // gives up on the order after this long in all
}

// outcome is how one order's payment ended for its customer.
type outcome struct {
	noAnswer, inFlight, refused int
	gaveUp                      bool
	err                         error // the load is wrong (a 4xx it should never get), or the api never answered
}

// pay sends the payment until it is answered 201 or 409 "already paid",
// retrying after no answer (unless c.giveUp), after 409 in flight (as its
// Retry-After says, at most 5s) and after a 5xx.
func (c customer) pay(ctx context.Context, id uuid.UUID) outcome {
	var out outcome
	key := "pay-" + id.String()
	deadline := time.Now().Add(c.timeout)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		status, retryAfter, body, err := c.post(ctx, id, key)
		var wait time.Duration
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			out.refused++ // nothing was sent: the api is restarting
			wait = 100 * time.Millisecond
		case err != nil:
			out.noAnswer++
			if c.giveUp {
				out.gaveUp = true
				return out
			}
			wait = backoff
		case status == http.StatusCreated, status == http.StatusConflict && retryAfter == 0:
			return out // charged, or a stored "already paid"
		case status == http.StatusConflict:
			out.inFlight++
			wait = min(retryAfter, 5*time.Second)
		case status >= 500:
			wait = backoff
		default:
			out.err = fmt.Errorf("payment of order %s answered %d: %.300s", id, status, body)
			return out
		}
		if time.Now().Add(wait).After(deadline) {
			out.err = fmt.Errorf("payment of order %s not answered within %s (%d requests without an answer, %d told in flight)",
				id, c.timeout, out.noAnswer, out.inFlight)
			return out
		}
		pause(ctx, wait)
		backoff = min(2*backoff, 2*time.Second)
	}
	out.err = ctx.Err()
	return out
}

// post sends one payment request and returns the answer's status, its
// Retry-After and its body.
func (c customer) post(ctx context.Context, id uuid.UUID, key string) (int, time.Duration, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.api+"/orders/"+id.String()+"/payments", strings.NewReader("{}"))
	if err != nil {
		return 0, 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return 0, 0, nil, err // the api died while answering
	}
	secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, time.Duration(secs) * time.Second, body, nil
}

// payAll creates n orders, rate a second, each just before its customer
// pays it; a share giveUp of the customers give up after a request that got
// no answer. sent is closed once every order's first request is on its way
// (the faults stop then); payAll returns once every customer is done.
func payAll(ctx context.Context, pool *pgxpool.Pool, api string, n int, rate, giveUp float64, sent chan<- struct{}) ([]bench.Order, Payments, error) {
	// A connection per request, as many customers have: over a kept-alive
	// connection Go's transport would itself send a request with an
	// Idempotency-Key again after the api died under it, and no customer
	// would ever give up.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	chunk := max(int(rate/10), 1) // orders created per statement: a tenth of a second's worth
	orders := make([]bench.Order, 0, n)
	outcomes := make(chan outcome, n)
	var wg sync.WaitGroup
	start := time.Now()
	var err error
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if i%chunk == 0 {
			var more []bench.Order
			if more, err = bench.SeedPendingOrders(ctx, pool, min(chunk, n-i)); err != nil {
				break
			}
			orders = append(orders, more...)
		}
		pause(ctx, time.Until(start.Add(time.Duration(float64(i)/rate*float64(time.Second)))))
		c := customer{api: api, client: client, giveUp: rand.Float64() < giveUp, timeout: 2 * time.Minute}
		id := orders[i].ID
		wg.Go(func() { outcomes <- c.pay(ctx, id) })
	}
	close(sent)
	wg.Wait()
	close(outcomes)
	var p Payments
	var errs []error
	for o := range outcomes {
		p.Refused += o.refused
		switch {
		case o.err != nil:
			errs = append(errs, o.err)
		case o.gaveUp:
			p.GaveUp++
		case o.noAnswer == 0 && o.inFlight == 0:
			p.FirstTry++
		default:
			p.Retried++
			if o.inFlight > 0 {
				p.WaitedLease++
			}
		}
	}
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Errorf("and %d more", len(errs)-3))
	}
	return orders, p, errors.Join(append([]error{err}, errs...)...)
}
