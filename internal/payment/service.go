package payment

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/platform/strictjson"
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

// MaxKeyLength is the longest Idempotency-Key accepted, as at Stripe.
const MaxKeyLength = 255

// CheckKey refuses a key that cannot be stored or passed on: empty, too
// long, or with characters outside printable ASCII (a NUL byte, for one,
// cannot be stored in PostgreSQL text).
func CheckKey(key string) error {
	if key == "" {
		return ErrKeyMissing
	}
	if len(key) > MaxKeyLength {
		return fmt.Errorf("%w: longer than %d characters", ErrKeyMissing, MaxKeyLength)
	}
	for i := range len(key) {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("%w: byte %d is not printable ASCII", ErrKeyMissing, i)
		}
	}
	return nil
}

// DefaultPaymentMethod is the payment method of a request whose body is
// empty or leaves it out.
const DefaultPaymentMethod = "pm_card"

// maxPaymentMethodLength bounds payment_method.
const maxPaymentMethodLength = 64

// Body is the decoded body of POST /orders/{id}/payments. The amount and the
// currency are not in it: they come from the order, so a client cannot pay a
// different amount than the order's.
type Body struct {
	// PaymentMethod names the card or wallet to charge, such as "pm_card".
	// It is part of the request's fingerprint: paying with another card is
	// another request and needs another key. (The fake gateway has a single
	// payment method, so it is not sent on.)
	PaymentMethod string `json:"payment_method"`
}

// DecodeBody decodes a request body strictly: it must be empty (every field
// takes its default) or one JSON object with only known fields of the right
// type and nothing after it. Field names are matched exactly. Every error
// wraps ErrInvalidBody and names the field at fault.
//
// Strictness matters to idempotency: a misspelt field that was silently
// ignored would make two different intents share one fingerprint.
func DecodeBody(b []byte) (Body, error) {
	pm := DefaultPaymentMethod
	in := struct {
		PaymentMethod *string `json:"payment_method"` // null sets it to nil
	}{&pm}
	if len(bytes.Trim(b, " \t\r\n")) == 0 {
		return Body{PaymentMethod: pm}, nil
	}
	// Names exactly as spelt, each once, valid UTF-8 and no NUL: a second
	// "payment_method" must not quietly win over the first.
	if err := strictjson.Decode(b, &in); err != nil {
		return Body{}, invalidBody("%v", err)
	}
	if in.PaymentMethod == nil {
		return Body{}, invalidBody("payment_method: must be a string, got null")
	}
	if len(pm) > maxPaymentMethodLength || !paymentMethod.MatchString(pm) {
		return Body{}, invalidBody("payment_method: must be pm_ followed by letters, digits or underscores, at most %d characters, got %q",
			maxPaymentMethodLength, pm)
	}
	return Body{PaymentMethod: pm}, nil
}

// paymentMethod is the shape of payment_method, such as "pm_card": pm_ then
// ASCII letters, digits or underscores.
var paymentMethod = regexp.MustCompile(`^pm_\w+$`)

// canonical is the body re-encoded from its decoded form: two requests that
// differ only in whitespace, field order or a spelt-out default encode the
// same, so they share a fingerprint.
func (b Body) canonical() []byte {
	out, _ := json.Marshal(b) // a struct of one string always encodes
	return out
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
