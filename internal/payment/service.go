package payment

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// FaultBeforeGatewayCall fires after phase 1 committed the key's lock and
// before the gateway is called. Armed in Fail mode it makes Pay return
// fault.ErrInjected without releasing the key: what a crash at that
// moment leaves behind, a key locked until its lock expires.
const FaultBeforeGatewayCall = "payment.before_gateway_call"

// FaultAfterGatewayCall fires once the gateway has answered and before the
// answer is stored. Armed in Crash mode it kills the api between the
// gateway's answer and the record of it: the charge is made, the service
// holds no answer, and the provider's payment.succeeded is left to record it
// (webhook.RecordCharge). Armed in Fail mode, Pay returns fault.ErrInjected
// leaving the key and the order's charge locked, as that crash would.
const FaultAfterGatewayCall = "payment.after_gateway_call"

// Config tunes the Service and the Cleaner. Zero values take the documented
// defaults.
type Config struct {
	// LockTimeout is how long a request holds its key before another request
	// with the same key may assume it crashed and recover the key (default
	// 30s). It must be longer than the slowest gateway call, or a slow
	// request is "recovered" while it still runs.
	LockTimeout time.Duration
	// Retention is how long a completed key is kept, and so how long a retry
	// gets the stored response (default 24h). Read by the Cleaner.
	Retention time.Duration
	// CleanInterval is how often Cleaner.Run deletes expired keys (default 1h).
	CleanInterval time.Duration
}

func (c Config) withDefaults() Config {
	c.LockTimeout = cmp.Or(c.LockTimeout, 30*time.Second)
	c.Retention = cmp.Or(c.Retention, 24*time.Hour)
	c.CleanInterval = cmp.Or(c.CleanInterval, time.Hour)
	return c
}

// Service charges orders under Idempotency-Keys. It is safe for concurrent
// use, also from several processes sharing one database: every decision
// about a key is taken by PostgreSQL.
type Service struct {
	pool *pgxpool.Pool
	gw   *GatewayClient
	cfg  Config
	// guards are Pay's guarded steps (Guarded, unless the lab wired a
	// mistake in one's place).
	guards Guards
	// faults arms FaultBeforeGatewayCall and FaultAfterGatewayCall; nil in
	// production.
	faults *fault.Set
}

// Guards are Pay's guarded steps, one field per guard; Guarded holds the
// guards. The lab (internal/lab/switches) wires a mistake in a field's
// place; Pay calls the field, never a branch.
type Guards struct {
	// Pay is the Idempotency-Key: payUnderKey (mistake: PayWithoutKey).
	Pay func(s *Service, ctx context.Context, req Request) (Response, error)
	// ClaimCharge is one charge per order, whatever the key: claimCharge
	// (mistake: NoChargeClaim).
	ClaimCharge func(s *Service, ctx context.Context, q *queries.Queries, c *claimed) error
}

// Guarded returns Pay's guards: production's steps.
func Guarded() Guards {
	return Guards{Pay: (*Service).payUnderKey, ClaimCharge: (*Service).claimCharge}
}

// NewService returns a Service storing keys through pool and charging through
// gw.
func NewService(pool *pgxpool.Pool, gw *GatewayClient, cfg Config) *Service {
	return &Service{pool: pool, gw: gw, cfg: cfg.withDefaults(), guards: Guarded()}
}

// WithGuards returns a copy of s whose Pay calls g's steps: the lab's
// wiring of a mistake (internal/lab/switches).
func (s *Service) WithGuards(g Guards) *Service {
	c := *s
	c.guards = g
	return &c
}

// Guards returns the steps s's Pay calls.
func (s *Service) Guards() Guards { return s.guards }

// WithFaults returns a copy of s whose fault points fire as f arms them.
func (s *Service) WithFaults(f *fault.Set) *Service {
	c := *s
	c.faults = f
	return &c
}

// Request is one POST /orders/{id}/payments as the HTTP layer received it.
type Request struct {
	OrderID uuid.UUID
	Key     string // the Idempotency-Key header
	Body    []byte // the raw request body; may be empty
}

// Response is what the HTTP layer writes back verbatim: a stored response is
// repeated byte for byte. Bodies of status 400 and above are
// application/problem+json, the others application/json.
type Response struct {
	Status int
	Body   []byte
	// Replayed: this response was stored by an earlier request with the same
	// key (Idempotent-Replayed: true); this request performed nothing.
	Replayed bool
}

// Pay charges the order at most once, whatever the key, in three atomic
// phases:
//
//  1. claim the key and the order's charge in one transaction (claim.go,
//     charge.go): or answer from the store, or refuse with ErrKeyMismatch or
//     *InFlightError;
//  2. call the gateway with the key of the order's charge attempt (ChargeKey);
//  3. store the gateway's definitive answer, or release the key after a
//     transient failure (complete.go).
//
// Errors: ErrKeyMissing, ErrInvalidBody, order.ErrNotFound, ErrKeyMismatch,
// *InFlightError, ErrGatewayUnavailable; anything else is an internal error
// after which the key is either untouched or locked until LockTimeout.
func (s *Service) Pay(ctx context.Context, req Request) (Response, error) {
	ctx = telemetry.WithOrderID(ctx, req.OrderID.String())
	ctx, step := telemetry.StartStep(ctx, nil, effect.Charge, effect.IdempotencyKey)
	resp, err := s.guards.Pay(s, ctx, req)
	switch {
	case err != nil:
		step.Fail(err)
	case resp.Replayed:
		step.End(effect.AlreadyApplied)
	default:
		step.End(effect.Applied)
	}
	return resp, err
}

// payUnderKey is Pay under the Idempotency-Key: its three phases.
func (s *Service) payUnderKey(ctx context.Context, req Request) (Response, error) {
	if err := CheckKey(req.Key); err != nil {
		return Response{}, err
	}
	body, err := DecodeBody(req.Body)
	if err != nil {
		return Response{}, err
	}
	c, err := s.claim(ctx, req, body)
	if err != nil {
		return Response{}, err
	}
	if c.done {
		return c.resp, nil
	}
	if err := s.faults.Hit(FaultBeforeGatewayCall); err != nil {
		// A crash here: the key stays locked until LockTimeout.
		return Response{}, fmt.Errorf("pay order %s: %w", req.OrderID, err)
	}
	answer, callErr := s.gw.Charge(ctx, c.gatewayKey, ChargeRequest{
		OrderID:     c.order.ID.String(),
		AmountCents: c.order.AmountCents,
		Currency:    c.order.Currency,
	})
	if err := s.faults.Hit(FaultAfterGatewayCall); err != nil {
		// A crash here: the money moved and no answer is stored.
		return Response{}, fmt.Errorf("pay order %s: %w", req.OrderID, err)
	}
	return s.complete(ctx, c, answer, callErr)
}
