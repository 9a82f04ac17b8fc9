package webhook

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// Ingestor verifies, parses and accepts provider events.
type Ingestor struct {
	pool      *pgxpool.Pool
	secret    []byte
	tolerance time.Duration
	now       func() time.Time
	// guards are accept's guarded steps (Guarded, unless the lab wired a
	// mistake in one's place).
	guards Guards
	// metrics counts signature failures and the inbox's answers (nil: not counted).
	metrics *telemetry.Metrics
}

// Guards are accept's guarded steps, one field per guard; Guarded holds the
// guards. The lab (internal/lab/switches) wires a mistake in a field's
// place; accept calls the field, never a branch.
type Guards struct {
	// RecordEvent is the webhook inbox (mistake: RecordEventUnguarded).
	RecordEvent func(ctx context.Context, q *queries.Queries, ev Event) (effect.Outcome, error)
	// RecordCharge is the charge record (mistake: RecordChargeUnguarded).
	RecordCharge func(ctx context.Context, q *queries.Queries, ev Event) error
}

// Guarded returns accept's guards: production's steps.
func Guarded() Guards { return Guards{RecordEvent: RecordEvent, RecordCharge: RecordCharge} }

// NewIngestor returns an Ingestor checking signatures with secret.
func NewIngestor(pool *pgxpool.Pool, secret []byte) *Ingestor {
	return &Ingestor{pool: pool, secret: secret, tolerance: DefaultTolerance, now: time.Now, guards: Guarded()}
}

// WithGuards returns a copy whose accept calls g's steps: the lab's wiring
// of a mistake (internal/lab/switches).
func (in *Ingestor) WithGuards(g Guards) *Ingestor {
	c := *in
	c.guards = g
	return &c
}

// Guards returns the steps in's accept calls.
func (in *Ingestor) Guards() Guards { return in.guards }

// WithMetrics returns a copy that counts refused signatures and the inbox's
// answers in m.
func (in *Ingestor) WithMetrics(m *telemetry.Metrics) *Ingestor {
	c := *in
	c.metrics = m
	return &c
}

// signatureFailureReason names a signature error for the failure counter.
func signatureFailureReason(err error) string {
	switch {
	case errors.Is(err, ErrSignatureMissing):
		return "missing"
	case errors.Is(err, ErrSignatureMalformed):
		return "malformed"
	case errors.Is(err, ErrSignatureExpired):
		return "expired"
	case errors.Is(err, ErrSignatureMismatch):
		return "mismatch"
	default:
		return "other"
	}
}
