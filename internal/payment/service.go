package payment

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// DefaultLockTimeout is Config.LockTimeout's default: the lease of a key and
// of an order's charge attempt.
const DefaultLockTimeout = 30 * time.Second

// Config tunes the Service and the Cleaner. Zero values take the documented
// defaults.
type Config struct {
	// LockTimeout is how long a request holds its key before another request
	// with the same key may assume it crashed and recover the key (default
	// 30s). It must be longer than the slowest gateway call, or a slow
	// request is "recovered" while it still runs. The lease is counted on
	// the database's clock: written as now() + LockTimeout and compared with
	// now() in SQL, never with the api's clock.
	LockTimeout time.Duration
	// Retention is how long a completed key is kept, and so how long a retry
	// gets the stored response (default 24h). Read by the Cleaner.
	Retention time.Duration
	// CleanInterval is how often Cleaner.Run deletes expired keys (default 1h).
	CleanInterval time.Duration
	// Clock is the api's clock (default time.Now), read only for the
	// Cleaner's cutoff. No lease reads it, so api hosts whose clocks are off
	// cannot take over each other's keys; clock_skew_test.go skews it here,
	// since faketime does not reach a Go binary's clock.
	Clock func() time.Time
}

func (c Config) withDefaults() Config {
	c.LockTimeout = cmp.Or(c.LockTimeout, DefaultLockTimeout)
	c.Retention = cmp.Or(c.Retention, 24*time.Hour)
	c.CleanInterval = cmp.Or(c.CleanInterval, time.Hour)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}

// leaseMs is LockTimeout as the queries take it: the milliseconds the
// database adds to its now().
func (c Config) leaseMs() int64 { return c.LockTimeout.Milliseconds() }

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
	// AskFirst asks the gateway what it did before an attempt whose outcome
	// is unknown is sent again: askFirst (mistake: SendBlind).
	AskFirst func(s *Service, ctx context.Context, c claimed) (Response, bool, error)
}

// Guarded returns Pay's guards: production's steps.
func Guarded() Guards {
	return Guards{Pay: (*Service).payUnderKey, ClaimCharge: (*Service).claimCharge, AskFirst: (*Service).askFirst}
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
	// key (the api's Idempotency-Replayed: true); this request performed nothing.
	Replayed bool
}

// problem is an RFC 9457 problem detail, the body of every stored refusal.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// problemBody encodes an application/problem+json body.
func problemBody(status int, title, detail string) []byte {
	b, _ := json.Marshal(problem{Type: "about:blank", Title: title, Status: status, Detail: detail}) // strings and an int always encode
	return b
}
