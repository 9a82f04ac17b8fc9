// Package effect names the results of a protection. "Already applied" is a
// normal, expected outcome of running the same work twice: it is returned as a
// value, logged, traced and counted, never raised as an error.
package effect

// Outcome is what a protection reports for one attempt at one effect.
type Outcome string

// Outcomes.
const (
	// Applied: this attempt produced the effect.
	Applied Outcome = "applied"
	// AlreadyApplied: the effect existed before this attempt; nothing was done.
	AlreadyApplied Outcome = "already_applied"
	// NotApplicable: the effect does not exist for this input (an order with
	// no affiliate, or whose commission rounds down to 0 cents, earns no
	// commission). Nothing is written.
	NotApplicable Outcome = "not_applicable"
)

// Technique names the protection that answered, as traced and counted.
type Technique string

// Techniques, one per guard; the table of guards (guards.go) says which
// effect each protects. Pay reports its one traced step, charge, as
// IdempotencyKey: the per-order charge claim and the charge record answer
// inside it, and are named here for the table.
const (
	StateCheck     Technique = "state_check"
	LedgerKey      Technique = "unique_ledger_key"
	Outbox         Technique = "transactional_outbox"
	Inbox          Technique = "inbox"
	ProviderKey    Technique = "provider_idempotency_key"
	WebhookInbox   Technique = "webhook_inbox"
	IdempotencyKey Technique = "idempotency_key"
	Reservation    Technique = "reservation_row"
	// IntentRow: one row per business intent under its primary key (the
	// order's refund, refund_requests), written with the message it causes.
	IntentRow Technique = "intent_row"
	// ChargeClaim: one charge per order, whatever the Idempotency-Key.
	ChargeClaim Technique = "charge_claim"
	// ChargeRecord: the charge the provider's signed event names, recorded
	// on the order's payment intent.
	ChargeRecord Technique = "charge_record"
	// AskFirst: a call whose outcome is unknown is never sent again blind;
	// the provider is asked what it did first.
	AskFirst Technique = "ask_provider_first"
	// NotificationClaim: one e-mail per order and template, whatever the
	// message: a claim row under that business identity, never cleaned.
	NotificationClaim Technique = "notification_claim"
)

// Result is one protected step of a handler run: which effect, which guard,
// what it answered. The execution log stores these for every consumer run.
type Result struct {
	Effect    string    `json:"effect"`
	Technique Technique `json:"technique"`
	Outcome   Outcome   `json:"outcome"`
}

// The effects, by the name the execution log, the traces and the metrics
// give each (Result.Effect) and the audit counts it under: each is a key of
// "effects" in GET /orders/{id}/audit and the alias of the column of the
// audit query (AuditOrder, sql/queries/audit.sql) that counts it. SQL cannot
// import these constants; a test (names_test.go) fails when a constant and
// the query's columns part.
const (
	// Paid: the order moved from pending to paid (the state check).
	Paid = "paid"
	// Commission: the affiliate's commission was credited (the ledger key).
	Commission = "commission"
	// ConfirmationEnqueued: the order_confirmed message was written to the
	// outbox, in the transaction of the state change.
	ConfirmationEnqueued = "confirmation_enqueued"
	// ConfirmationDelivered: the order_confirmed consumer took the message
	// (its inbox row).
	ConfirmationDelivered = "confirmation_delivered"
	// NotificationSent: the provider sent the customer's e-mail.
	NotificationSent = "notification_sent"
	// Charges: the gateway charged the customer. The payment step that asks
	// for it is named Charge; the audit counts the charges the gateway
	// confirmed.
	Charges = "charges"
	// StockReserved: the order's items were taken out of stock (the
	// reservation row and the guarded decrement, internal/stock).
	StockReserved = "stock_reserved"
	// StockReleased: the order's reserved items went back into stock.
	StockReleased = "stock_released"
	// CommissionReversed: the commission of a refunded order was reversed by
	// a ledger entry of its own (internal/ledger, ReverseCommission).
	CommissionReversed = "commission_reversed"
	// Refunded: the order moved to refunded (a state check, internal/order,
	// MarkRefunded).
	Refunded = "refunded"
	// RefundNotified: the provider sent the customer the notice of the
	// refund (the inbox and the provider key, as for the confirmation).
	RefundNotified = "refund_notified"
	// RefundFailed: the provider refused the order's refund for good and
	// the order moved to refund_failed (a state check, internal/order,
	// MarkRefundFailed): its money is still with the merchant, for a person
	// to refund in the provider's dashboard.
	RefundFailed = "refund_failed"
)

// The protected steps the audit does not count under their own name.
const (
	// Charge: the payment step that calls the gateway (internal/payment).
	Charge = "charge"
	// PaymentEventAccepted: the provider's webhook event was taken into the
	// webhook inbox (internal/webhook).
	PaymentEventAccepted = "payment_event_accepted"
	// RefundConfirmationDelivered: the refund_confirmed consumer took the
	// message (its inbox row).
	RefundConfirmationDelivered = "refund_confirmation_delivered"
	// RefundRequested: the order's one refund intent was recorded, with its
	// refund_requested message (internal/refund).
	RefundRequested = "refund_requested"
	// GatewayRefund: the gateway was asked to refund the order, under the
	// key derived from it (payment.RefundKey).
	GatewayRefund = "gateway_refund"
)
