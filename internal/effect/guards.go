package effect

import "slices"

// Protection is one row of the project's one table of guards: an effect
// that must never happen twice, and what keeps it from happening twice.
type Protection struct {
	// Effect is the effect's name (Paid, Commission, ...).
	Effect string
	// Says is the effect in words, as the README's table gives it.
	Says string
	// Technique is the guard as traced and counted.
	Technique Technique
	// How is the technique in words, for the README's table.
	How string
	// Without is the guard's name as the lab switches it off
	// (--without NAME); "" when the lab has no switch for it.
	Without string
	// Guard is the call that is the guard, as package.Name (a method as
	// package.Type.Name); the file it is declared in is the row's code.
	Guard string
	// Mistake is the realistic mistake the guard prevents, which the lab
	// wires in its place with the guard switched off, as package.Name; ""
	// when Without is "".
	Mistake string
	// Page is the doc page that teaches the technique.
	Page string
}

// Guard names, as --without spells them.
const (
	GuardChargeClaim      = "charge-claim"
	GuardIdempotencyKey   = "idempotency-key"
	GuardChargeRecord     = "charge-record"
	GuardWebhookInbox     = "webhook-inbox"
	GuardStateCheck       = "state-check"
	GuardStockReservation = "stock-reservation"
	GuardLedgerKey        = "ledger-key"
	GuardOutbox           = "outbox"
	GuardInbox            = "inbox"
	GuardProviderKey      = "provider-key"
)

// Protections is the table, in the order an order meets its rows. The
// README's table of effects is made from it, and the lab's switches, the
// scenarios' guard names and the doc pages are checked against it
// (guards_test.go).
var Protections = []Protection{
	{Effect: Charges, Says: "charge the customer", Technique: ChargeClaim,
		How:     "one charge per order whatever the key: a per-order charge claim (`order_charges`, unique per order) and a gateway key from the order; an order no longer pending never reaches the gateway again",
		Without: GuardChargeClaim, Guard: "payment.Service.claimCharge", Mistake: "payment.NoChargeClaim", Page: "docs/techniques/idempotency-key.md"},
	{Effect: Charge, Says: "charge again on a client's retry", Technique: IdempotencyKey,
		How:     "the `Idempotency-Key` at `POST /orders/{id}/payments`: a retry gets the stored answer, byte for byte",
		Without: GuardIdempotencyKey, Guard: "payment.Service.payUnderKey", Mistake: "payment.PayWithoutKey", Page: "docs/techniques/idempotency-key.md"},
	{Effect: Charges, Says: "lose a charge whose answer died with the api", Technique: ChargeRecord,
		How:     "the signed `payment.succeeded` records its charge on the order's payment intent, so the charge can be refunded and is never made again",
		Without: GuardChargeRecord, Guard: "webhook.RecordCharge", Mistake: "webhook.RecordChargeUnguarded", Page: "docs/techniques/idempotency-key.md"},
	{Effect: PaymentEventAccepted, Says: "accept a payment event", Technique: WebhookInbox,
		How:     "webhook inbox by provider event id, in the transaction of the outbox write",
		Without: GuardWebhookInbox, Guard: "webhook.RecordEvent", Mistake: "webhook.RecordEventUnguarded", Page: "docs/techniques/inbox.md"},
	{Effect: Paid, Says: "mark the order paid", Technique: StateCheck,
		How:     "state check: `UPDATE ... WHERE status = 'pending'`",
		Without: GuardStateCheck, Guard: "order.MarkPaid", Mistake: "order.MarkPaidUnguarded", Page: "docs/techniques/state-check.md"},
	{Effect: StockReserved, Says: "reserve a scarce resource (stock)", Technique: Reservation,
		How:     "a reservation row per (order, SKU) under a unique key and a guarded decrement (`WHERE available >= quantity`), in the transition's transaction",
		Without: GuardStockReservation, Guard: "stock.Reserve", Mistake: "stock.ReserveUnguarded", Page: "docs/techniques/guarded-counter.md"},
	{Effect: Commission, Says: "release the affiliate commission", Technique: LedgerKey,
		How:     "ledger row with a UNIQUE business key, `ON CONFLICT DO NOTHING`",
		Without: GuardLedgerKey, Guard: "ledger.ReleaseCommission", Mistake: "ledger.ReleaseCommissionUnguarded", Page: "docs/techniques/ledger-key.md"},
	{Effect: ConfirmationEnqueued, Says: "publish the order confirmation", Technique: Outbox,
		How:     "transactional outbox, deterministic message id",
		Without: GuardOutbox, Guard: "outbox.Publish", Mistake: "outbox.PublishAfterCommit", Page: "docs/techniques/outbox.md"},
	{Effect: ConfirmationDelivered, Says: "deliver the confirmation once per message", Technique: Inbox,
		How:     "inbox by (consumer, message id)",
		Without: GuardInbox, Guard: "inbox.Seen", Mistake: "inbox.SeenUnguarded", Page: "docs/techniques/inbox.md"},
	{Effect: NotificationSent, Says: "send the customer notification", Technique: ProviderKey,
		How:     "the message id as the provider's Idempotency-Key",
		Without: GuardProviderKey, Guard: "notify.MessageKey", Mistake: "notify.FreshKey", Page: "docs/techniques/provider-key.md"},
	{Effect: RefundRequested, Says: "refund the order (a short order's compensation, `POST /orders/{id}/refunds`, a `payment.refunded` webhook)", Technique: IntentRow,
		How:   "one refund intent per order (`refund_requests`, primary key) written with its message",
		Guard: "refund.Request", Page: "docs/techniques/compensation.md"},
	{Effect: GatewayRefund, Says: "give the money back", Technique: ProviderKey,
		How:   "a gateway key from the order (`payment.RefundKey`)",
		Guard: "payment.RefundKey", Page: "docs/techniques/provider-key.md"},
	{Effect: Refunded, Says: "mark the order refunded", Technique: StateCheck,
		How:     "state check: pending or paid -> refunded, once; `refunded` is terminal, so a late payment applies nothing",
		Without: GuardStateCheck, Guard: "order.MarkRefunded", Mistake: "order.MarkRefundedUnguarded", Page: "docs/techniques/state-check.md"},
	{Effect: StockReleased, Says: "give the stock back", Technique: Reservation,
		How:     "the reservation rows' `released_at IS NULL`, then the units of those rows only",
		Without: GuardStockReservation, Guard: "stock.Release", Mistake: "stock.ReleaseUnguarded", Page: "docs/techniques/guarded-counter.md"},
	{Effect: CommissionReversed, Says: "reverse the commission", Technique: LedgerKey,
		How:     "a reversal ledger entry under its own key (order id + entry type), under the order's row lock with the commission",
		Without: GuardLedgerKey, Guard: "ledger.ReverseCommission", Mistake: "ledger.ReverseCommissionUnguarded", Page: "docs/techniques/ledger-key.md"},
	{Effect: RefundConfirmationDelivered, Says: "deliver the refund notice once per message", Technique: Inbox,
		How:     "inbox by (consumer, message id)",
		Without: GuardInbox, Guard: "inbox.Seen", Mistake: "inbox.SeenUnguarded", Page: "docs/techniques/inbox.md"},
	{Effect: RefundNotified, Says: "send the refund notice", Technique: ProviderKey,
		How:     "the message id (one per order) as the provider's Idempotency-Key",
		Without: GuardProviderKey, Guard: "notify.MessageKey", Mistake: "notify.FreshKey", Page: "docs/techniques/provider-key.md"},
}

// GuardNames lists the guards the lab can switch off, each once, sorted.
func GuardNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, p := range Protections {
		if p.Without != "" && !seen[p.Without] {
			seen[p.Without] = true
			names = append(names, p.Without)
		}
	}
	slices.Sort(names)
	return names
}
