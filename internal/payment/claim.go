package payment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// claimed is what phase 1 decided for one request: either a final response
// (done), or the right to call the gateway for this key and the order's
// charge attempt.
type claimed struct {
	order       queries.Order
	scope, key  string
	fingerprint string
	attempt     int32  // the order's charge attempt this request holds (charge.go)
	gatewayKey  string // the Idempotency-Key this request sends to the gateway
	unknown     bool   // an earlier holder of the attempt may have called the gateway (askFirst)
	done        bool
	resp        Response
}

// claim is phase 1, one transaction: load the order, claim the key, then
// claim the order's charge (charge.go).
//
// Effect protected: the request, against concurrent and repeated sends.
// INSERT ... ON CONFLICT DO NOTHING on (scope, key) lets exactly one first
// request insert the row, with its lock; the others wait for its commit,
// insert nothing, and read it (resume). The charge is protected per order by
// claimCharge. Nothing is written for a missing order or a refusal.
func (s *Service) claim(ctx context.Context, req Request, body Body) (claimed, error) {
	var c claimed
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := queries.New(tx)
		o, err := order.Get(ctx, q, req.OrderID)
		if err != nil {
			return err
		}
		// The key is scoped per customer: another customer's identical key is
		// another key.
		c = claimed{order: o, scope: o.CustomerID, key: req.Key, fingerprint: fingerprint(o.ID, body)}
		inserted, err := q.IdempotencyKeyInsert(ctx, queries.IdempotencyKeyInsertParams{
			Scope: c.scope, Key: c.key, Fingerprint: c.fingerprint, OrderID: o.ID, LeaseMs: s.cfg.leaseMs(),
		})
		if err != nil {
			return fmt.Errorf("insert idempotency key: %w", err)
		}
		if inserted == 0 {
			if err := s.resume(ctx, q, &c); err != nil || c.done {
				return err
			}
		}
		return s.guards.ClaimCharge(s, ctx, q, &c)
	})
	if err != nil {
		return claimed{}, fmt.Errorf("claim idempotency key for order %s: %w", req.OrderID, err)
	}
	return c, nil
}

// fingerprint is the SHA-256 of the request's method, path and canonical
// body, so a retry changing only whitespace still matches. Failure it
// prevents: a key reused for another order or card silently getting the
// first one's "charged"; it gets ErrKeyMismatch (422) instead.
func fingerprint(orderID uuid.UUID, body Body) string {
	h := sha256.New()
	h.Write([]byte("POST /orders/" + orderID.String() + "/payments\n"))
	h.Write(body.canonical())
	return hex.EncodeToString(h.Sum(nil))
}

// resume decides for a key that already existed, in this order:
//
//   - another request's fingerprint: ErrKeyMismatch;
//   - a stored response: that response, byte for byte, Replayed;
//   - a lock that has not expired: *InFlightError, the holder is charging;
//   - an expired lock (the holder crashed or gave the key back): recover it
//     with a conditional UPDATE and carry on to the gateway.
//
// The lock check is a fast path that tells the client the lock's time left
// (Retry-After), on the database's clock. It is not the guard: another
// request may recover the key before the UPDATE, so recoverKey re-checks the
// lock in its WHERE. A recovered key goes on to claimCharge like a new one.
func (s *Service) resume(ctx context.Context, q *queries.Queries, c *claimed) error {
	row, err := q.IdempotencyKeyGet(ctx, queries.IdempotencyKeyGetParams{Scope: c.scope, Key: c.key})
	if err != nil {
		return fmt.Errorf("read idempotency key: %w", err)
	}
	if row.Fingerprint != c.fingerprint {
		return ErrKeyMismatch
	}
	if row.CompletedAt != nil {
		c.done, c.resp = true, Response{Status: int(row.ResponseStatus.Int32), Body: row.ResponseBody, Replayed: true}
		return nil
	}
	if row.Held {
		return inFlight(time.Duration(row.LockLeftMs) * time.Millisecond)
	}
	return s.recoverKey(ctx, q, c)
}

// recoverKey takes over a key whose lock expired.
//
// Failure it prevents: two retries of a crashed request both calling the
// gateway. UPDATE ... WHERE locked_until < now() AND completed_at IS NULL:
// under READ COMMITTED a concurrent second UPDATE waits, re-checks its WHERE
// against the new lock and matches nothing; its caller is told "in flight".
func (s *Service) recoverKey(ctx context.Context, q *queries.Queries, c *claimed) error {
	won, err := q.IdempotencyKeyRecover(ctx, queries.IdempotencyKeyRecoverParams{
		LeaseMs: s.cfg.leaseMs(), Scope: c.scope, Key: c.key,
	})
	if err != nil {
		return fmt.Errorf("recover idempotency key: %w", err)
	}
	if won == 0 {
		return inFlight(s.cfg.LockTimeout)
	}
	return nil
}

// NoChargeClaim is the mistake claimCharge prevents, trusting the
// Idempotency-Key alone: no per-order claim, and a gateway key derived from
// this request's key (GatewayKey), so every new key charges the order again.
func NoChargeClaim(_ *Service, _ context.Context, _ *queries.Queries, c *claimed) error {
	c.gatewayKey = GatewayKey(c.scope, c.key)
	return nil
}
