package payment

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// TestStoreKeepsTheFirstCompletion: two requests hold one key in turn (the
// first one's lock expired during a slow gateway call and a retry recovered
// the key), and both reach phase 3. The first to store wins; the second is
// answered with what the first stored, marked Replayed, whatever its own
// answer was.
func TestStoreKeepsTheFirstCompletion(t *testing.T) {
	t.Parallel()
	pool, o := newTestOrder(t)
	ctx := context.Background()
	if _, err := queries.New(pool).IdempotencyKeyInsert(ctx, queries.IdempotencyKeyInsertParams{
		Scope: "c1", Key: "k1", Fingerprint: "fp", OrderID: o.ID, LeaseMs: time.Minute.Milliseconds(),
	}); err != nil {
		t.Fatal(err)
	}
	s := NewService(pool, nil, Config{})
	c := claimed{order: o, scope: "c1", key: "k1", fingerprint: "fp"}
	answer := GatewayAnswer{Status: http.StatusCreated, Body: []byte(`{"id":"ch_1"}`)}

	first, err := s.store(ctx, c, answer, chargedResponse(o.ID, answer.Body), chargeCharged)
	if err != nil || first.Replayed {
		t.Fatalf("first store = replayed %v, %v; want stored, not replayed", first.Replayed, err)
	}
	later := GatewayAnswer{Status: http.StatusCreated, Body: []byte(`{"id":"ch_1","replayed":true}`)}
	second, err := s.store(ctx, c, later, chargedResponse(o.ID, later.Body), chargeCharged)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Replayed || second.Status != first.Status || !bytes.Equal(second.Body, first.Body) {
		t.Fatalf("second store = %d replayed=%v %s; want the first response %s, replayed",
			second.Status, second.Replayed, second.Body, first.Body)
	}
}

// TestKeyClaimRace pins what TestPayConcurrent can only provoke: the key's
// first request has inserted the key but not yet committed when its retry
// claims it. The retry must wait for the first, then be told the key is in
// flight; a check-then-insert claim would not see the uncommitted row.
func TestKeyClaimRace(t *testing.T) {
	t.Parallel()
	pool, o := newTestOrder(t)
	ctx := context.Background()
	body, err := DecodeBody(nil)
	if err != nil {
		t.Fatal(err)
	}
	first, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	if _, err := queries.New(first).IdempotencyKeyInsert(ctx, queries.IdempotencyKeyInsertParams{
		Scope: "c1", Key: "k1", Fingerprint: fingerprint(o.ID, body), OrderID: o.ID, LeaseMs: time.Minute.Milliseconds(),
	}); err != nil {
		t.Fatal(err)
	}
	s := NewService(pool, nil, Config{})
	second := make(chan error, 1)
	go func() {
		_, err := s.claim(ctx, Request{OrderID: o.ID, Key: "k1"}, body)
		second <- err
	}()
	pgtest.WaitLockWaiters(t, pool, 1)
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.As(err, new(*InFlightError)) {
		t.Fatalf("retry: err = %v, want *InFlightError", err)
	}
}

// newTestOrder gives the test a database of its own with one pending order
// of customer c1.
func newTestOrder(t *testing.T) (*pgxpool.Pool, queries.Order) {
	t.Helper()
	pool, _ := pgtest.NewDatabase(t)
	o, err := order.Create(context.Background(), queries.New(pool), order.NewOrder{CustomerID: "c1", AmountCents: 100, Currency: "BRL"})
	if err != nil {
		t.Fatal(err)
	}
	return pool, o
}
