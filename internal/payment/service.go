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

// Config tunes the Service and the Cleaner; zero values take the defaults.
type Config struct {
	// LockTimeout is how long a request holds its key before another may
	// assume it crashed and recover it (default 30s): longer than the slowest
	// gateway call. It is counted on the database's clock (now() in SQL).
	LockTimeout time.Duration
	// Retention is how long a completed key, and so its stored response, is
	// kept (default 24h); CleanInterval how often the Cleaner deletes (1h).
	Retention, CleanInterval time.Duration
	// Clock (default time.Now) is read only for the Cleaner's cutoff, never
	// for a lease, so hosts with skewed clocks cannot take over each other's keys.
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

// leaseMs is LockTimeout in the milliseconds the queries add to now().
func (c Config) leaseMs() int64 { return c.LockTimeout.Milliseconds() }

// Service charges orders under Idempotency-Keys, safely from many processes
// sharing one database: every decision about a key is PostgreSQL's.
type Service struct {
	pool   *pgxpool.Pool
	gw     *GatewayClient
	cfg    Config
	guards Guards     // Pay's guarded steps (Guarded, unless the lab wired a mistake)
	faults *fault.Set // the gateway call's fault points; nil in production
}

// Guards are Pay's guarded steps, one field per guard: the lab
// (internal/lab/switches) wires a mistake in a field's place.
type Guards struct {
	// Pay is the Idempotency-Key: payUnderKey (mistake: PayWithoutKey).
	Pay func(s *Service, ctx context.Context, req Request) (Response, error)
	// ClaimCharge is one charge per order: claimCharge (mistake: NoChargeClaim).
	ClaimCharge func(s *Service, ctx context.Context, q *queries.Queries, c *claimed) error
	// AskFirst asks before an unknown attempt is resent: askFirst (mistake: SendBlind).
	AskFirst func(s *Service, ctx context.Context, c claimed) (Response, bool, error)
}

// Guarded returns Pay's guards: production's steps.
func Guarded() Guards {
	return Guards{Pay: (*Service).payUnderKey, ClaimCharge: (*Service).claimCharge, AskFirst: (*Service).askFirst}
}

// NewService returns a Service storing keys through pool, charging through gw.
func NewService(pool *pgxpool.Pool, gw *GatewayClient, cfg Config) *Service {
	return &Service{pool: pool, gw: gw, cfg: cfg.withDefaults(), guards: Guarded()}
}

// WithGuards returns a copy of s whose Pay calls g's steps (the lab's mistakes).
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
// long, or outside printable ASCII (PostgreSQL text cannot hold a NUL).
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

// DefaultPaymentMethod is the payment method of a body that leaves it out.
const DefaultPaymentMethod = "pm_card"

const maxPaymentMethodLength = 64

// Body is the decoded body of POST /orders/{id}/payments. The amount and the
// currency come from the order, so a client cannot pay another amount.
type Body struct {
	// PaymentMethod, such as "pm_card", is part of the fingerprint: another
	// card is another request, with another key. (The fake gateway has one.)
	PaymentMethod string `json:"payment_method"`
}

// DecodeBody decodes a body strictly (empty, or one object of known fields,
// strictjson); every error wraps ErrInvalidBody and names the field. A
// misspelt field silently ignored would give two intents one fingerprint.
func DecodeBody(b []byte) (Body, error) {
	pm := DefaultPaymentMethod
	in := struct {
		PaymentMethod *string `json:"payment_method"` // null sets it to nil
	}{&pm}
	if len(bytes.Trim(b, " \t\r\n")) == 0 {
		return Body{PaymentMethod: pm}, nil
	}
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

// paymentMethod is payment_method's shape: pm_ then letters, digits or "_".
var paymentMethod = regexp.MustCompile(`^pm_\w+$`)

// canonical is the body re-encoded from its decoded form: two requests that
// differ only in whitespace, field order or a spelt-out default encode the
// same, so they share a fingerprint.
func (b Body) canonical() []byte {
	out, _ := json.Marshal(b) // a struct of one string always encodes
	return out
}

// Response is what the HTTP layer writes back verbatim, a stored one byte for
// byte; bodies of status 400 and above are application/problem+json.
type Response struct {
	Status int
	Body   []byte
	// Replayed: an earlier request with the key stored it (Idempotency-Replayed).
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
