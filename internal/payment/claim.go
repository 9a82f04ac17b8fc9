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
// Effect protected: the request, against concurrent and repeated sends of
// it. INSERT ... ON CONFLICT DO NOTHING on the primary key (scope, key) lets
// exactly one of any number of concurrent first requests insert the row, with
// its lock (until the database's now() + LockTimeout); the others wait for
// that insert to commit, insert nothing, and read the row (resume). The
// charge itself is protected per order, by claimCharge, whatever the key.
// Nothing is written when the order does not exist or the request is refused.
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

// fingerprint identifies the request a key was first used for: the SHA-256
// of its method, path and canonical body (Body.canonical), so a retry that
// only changes whitespace or field order still matches. Failure it prevents:
// a client bug that reuses a key for another request (another order, another
// card) silently getting the first one's stored "charged" although nothing
// it asked for happened; it is refused with ErrKeyMismatch (422) instead.
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
// The lock check here is a fast path that also tells the client how long
// the holder's lock has left (Retry-After); both are the database's answer
// (held, lock_left_ms), on the same clock the lock was written with. It is
// not the guard: between this read and the UPDATE another request may
// recover the key, which is why recoverKey re-checks the lock in its WHERE
// clause.
//
// A recovered key goes on to claimCharge like a new one: its holder crashed,
// and another key may have charged the order since.
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
// Failure it prevents: two retries of a crashed request both recovering the
// key and both calling the gateway. UPDATE ... WHERE locked_until < now()
// AND completed_at IS NULL: under READ COMMITTED a concurrent second UPDATE
// waits for the first, re-checks its WHERE clause against the new lock, and
// matches nothing. The one caller that changed a row goes on; the others are
// told the key is in flight, for as long as the winner's new lock lasts.
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
