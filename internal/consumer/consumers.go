package consumer

import (
	"errors"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/levers"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
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
	// direct publishes to the broker, bypassing the outbox; used only with
	// levers.Outbox off (publishIfOutboxOff).
	direct message.Publisher
	// levers may switch guards off and arm the fault points (levers.go);
	// the zero value is production.
	levers levers.Levers
	// metrics counts executions and guard answers; logger logs each
	// execution. Both nil unless WithTelemetry.
	metrics *telemetry.Metrics
	logger  *slog.Logger
	// execLog, when set, collects the execution log of a batch for one
	// write (Batched); nil: each run is written as it ends.
	execLog *execBuffer
}

// NewConsumers wires the handlers, with every guard on. direct may be nil
// unless WithLevers switches the outbox off.
func NewConsumers(pool *pgxpool.Pool, notifier *notify.Client, direct message.Publisher) *Consumers {
	// Routed: a statement runs on the reader's transaction when the
	// message's context carries one (CONSUMER_POSITION=with-effects).
	return &Consumers{pool: pool, q: queries.New(postgres.Routed{Pool: pool}), notifier: notifier, direct: direct}
}

// WithGateway returns a copy of c that refunds orders through gw. Without
// it, refund_requested messages fail (and are retried) until a gateway is
// configured.
func (c *Consumers) WithGateway(gw *payment.GatewayClient) *Consumers {
	cp := *c
	cp.gateway = gw
	return &cp
}

// WithLevers returns a copy of c that obeys the lab's levers lv: a guard
// switched off makes its step the mistake the guard prevents, and the fault
// points (FaultAfterMarkPaid, ...) fire when armed (levers.go). The
// notifier's levers are its own (notify.Client.WithLevers): give both the
// same lv. Without WithLevers, or with levers.None(), every guard is on.
func (c *Consumers) WithLevers(lv levers.Levers) *Consumers {
	cp := *c
	cp.levers = lv
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
