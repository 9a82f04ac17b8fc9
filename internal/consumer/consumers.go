package consumer

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/inbox"
	"github.com/orderpaid/orderpaid/internal/ledger"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/stock"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

// Handler names, as stored in the execution log and used as consumer groups.
const (
	HandlerOrderPaid       = "order_paid"
	HandlerOrderConfirmed  = "order_confirmed"
	HandlerOrderRefunded   = "order_refunded"
	HandlerRefundRequested = "refund_requested"
	HandlerRefundConfirmed = "refund_confirmed"
)

// Consumers holds what the handlers need.
type Consumers struct {
	pool     *pgxpool.Pool
	q        *queries.Queries
	notifier *notify.Client
	// gateway refunds orders (HandleRefundRequested); nil until WithGateway.
	gateway *payment.GatewayClient
	// guards are the guarded steps the handlers call (Guarded, unless the
	// lab wired a mistake in one's place).
	guards Guards
	// faults are the fault points armed between steps; nil in production.
	faults *fault.Set
	// metrics counts executions and guard answers; logger logs each
	// execution. Both nil unless WithTelemetry.
	metrics *telemetry.Metrics
	logger  *slog.Logger
	// execLog, when set, collects the execution log of a batch for one
	// write (Batched); nil: each run is written as it ends.
	execLog *execBuffer
}

// Guards are the guarded steps of the handlers, one field per call, each
// named for what it does; Guarded holds the guards themselves. The lab
// (internal/lab/switches) wires the mistake a guard prevents in that
// guard's fields, and nothing else changes: the handlers call the field,
// never a branch. Batch mode uses the guards' set forms, so it runs the
// messages of a guard switched off one at a time, through these.
type Guards struct {
	// MarkPaid, MarkRefunded: the state check (order).
	MarkPaid     func(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, queries.Order, error)
	MarkRefunded func(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, string, error)
	// ReserveStock, ReleaseStock: the reservation rows (stock).
	ReserveStock func(ctx context.Context, tx pgx.Tx, orderID uuid.UUID, messageID string) (effect.Outcome, error)
	ReleaseStock func(ctx context.Context, tx pgx.Tx, orderID uuid.UUID, messageID string) (effect.Outcome, error)
	// ReleaseCommission, ReverseCommission: the ledger's business key.
	ReleaseCommission func(ctx context.Context, q *queries.Queries, o queries.Order, messageID string) (effect.Outcome, error)
	ReverseCommission func(ctx context.Context, q *queries.Queries, orderID uuid.UUID, messageID string) (effect.Outcome, error)
	// Enqueue: the transactional outbox.
	Enqueue func(ctx context.Context, tx pgx.Tx, topic string, msgs ...*message.Message) error
	// InboxSeen: the consumer inbox.
	InboxSeen func(ctx context.Context, q *queries.Queries, consumer, messageID string) (bool, error)
	// ProviderKey: the provider's Idempotency-Key for a message.
	ProviderKey func(messageID string) string
	// ClaimNotice: one e-mail per order and template (notify.Claim).
	ClaimNotice func(ctx context.Context, q *queries.Queries, orderID uuid.UUID, template, key string) (notify.Claimed, error)
}

// Guarded returns the guards: production's steps.
func Guarded() Guards {
	return Guards{
		MarkPaid:          order.MarkPaid,
		MarkRefunded:      order.MarkRefunded,
		ReserveStock:      stock.Reserve,
		ReleaseStock:      stock.Release,
		ReleaseCommission: ledger.ReleaseCommission,
		ReverseCommission: ledger.ReverseCommission,
		Enqueue:           outbox.Publish,
		InboxSeen:         inbox.Seen,
		ProviderKey:       notify.MessageKey,
		ClaimNotice:       notify.Claim,
	}
}

// NewConsumers wires the handlers, with every guard on.
func NewConsumers(pool *pgxpool.Pool, notifier *notify.Client) *Consumers {
	// Routed: a statement runs on the reader's transaction when the
	// message's context carries one (CONSUMER_POSITION=with-effects).
	return &Consumers{pool: pool, q: queries.New(postgres.Routed{Pool: pool}), notifier: notifier, guards: Guarded()}
}

// WithGateway returns a copy of c that refunds orders through gw. Without
// it, refund_requested messages fail (and are retried) until a gateway is
// configured.
func (c *Consumers) WithGateway(gw *payment.GatewayClient) *Consumers {
	cp := *c
	cp.gateway = gw
	return &cp
}

// WithGuards returns a copy of c whose handlers call g's steps: the lab's
// wiring of a mistake (internal/lab/switches).
func (c *Consumers) WithGuards(g Guards) *Consumers {
	cp := *c
	cp.guards = g
	return &cp
}

// Guards returns the steps c's handlers call.
func (c *Consumers) Guards() Guards { return c.guards }

// WithFaults returns a copy of c whose fault points (FaultAfterMarkPaid,
// ...) fire as f arms them.
func (c *Consumers) WithFaults(f *fault.Set) *Consumers {
	cp := *c
	cp.faults = f
	return &cp
}

// WithTelemetry returns a copy of c that counts its executions and its
// guards' answers in m, and logs one line per execution on logger, with the
// trace and span ids when logger's handler is telemetry.NewLogHandler. Either
// may be nil. Spans need no setting: they continue the delivery's span.
func (c *Consumers) WithTelemetry(m *telemetry.Metrics, logger *slog.Logger) *Consumers {
	cp := *c
	cp.metrics, cp.logger = m, logger
	return &cp
}

// permanentError marks a failure that retrying cannot fix; the router sends
// such messages to the poison queue at once.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err: err} }

// IsPermanent reports whether err can never succeed on retry.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
