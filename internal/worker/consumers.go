package worker

import (
	"errors"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/db"
	"github.com/orderpaid/orderpaid/internal/faultpoint"
	"github.com/orderpaid/orderpaid/internal/notify"
)

// Handler names, as stored in the execution log and used as consumer groups.
const (
	HandlerOrderPaid      = "order_paid"
	HandlerOrderConfirmed = "order_confirmed"
)

// Guards switches the protections. Production code runs with AllGuards; the
// scenarios switch one off to show the damage its absence does.
type Guards struct {
	StateCheck  bool // conditional UPDATE ... WHERE status = 'pending'
	LedgerKey   bool // ledger key from the business intent, not the delivery
	Outbox      bool // confirmation written to the outbox in the transition's transaction
	Inbox       bool // order_confirmed consumer's (consumer, message id) inbox
	ProviderKey bool // message id passed to the provider as its Idempotency-Key
}

// AllGuards is the correct configuration.
var AllGuards = Guards{StateCheck: true, LedgerKey: true, Outbox: true, Inbox: true, ProviderKey: true}

// Consumers holds what the handlers need.
type Consumers struct {
	pool     *pgxpool.Pool
	q        *db.Queries
	notifier *notify.Client
	// direct publishes to the broker, bypassing the outbox; used only when
	// Guards.Outbox is off.
	direct message.Publisher
	faults *faultpoint.Set
	guards Guards
}

// NewConsumers wires the handlers. faults may be nil (no fault injection).
func NewConsumers(pool *pgxpool.Pool, notifier *notify.Client, direct message.Publisher, faults *faultpoint.Set, guards Guards) *Consumers {
	return &Consumers{pool: pool, q: db.New(pool), notifier: notifier, direct: direct, faults: faults, guards: guards}
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
