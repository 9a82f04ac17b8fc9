package effect

import "slices"

// Protection is one row of the project's one table of guards: an effect
// that must never happen twice, and what keeps it from happening twice.
type Protection struct {
	// Effect is the effect's name (Paid, Commission, ...).
	Effect string
	// Says is the effect in words, as the README's table gives it.
	Says string
	// SaysPT is Says in Brazilian Portuguese, for README.pt-BR.md's table.
	SaysPT string
	// Technique is the guard as traced and counted.
	Technique Technique
	// How is the technique in words, for the README's table.
	How string
	// HowPT is How in Brazilian Portuguese, for README.pt-BR.md's table.
	HowPT string
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
	GuardChargeClaim       = "charge-claim"
	GuardIdempotencyKey    = "idempotency-key"
	GuardChargeRecord      = "charge-record"
	GuardWebhookInbox      = "webhook-inbox"
	GuardStateCheck        = "state-check"
	GuardStockReservation  = "stock-reservation"
	GuardLedgerKey         = "ledger-key"
	GuardOutbox            = "outbox"
	GuardInbox             = "inbox"
	GuardProviderKey       = "provider-key"
	GuardAskFirst          = "ask-first"
	GuardNotificationClaim = "notification-claim"
)

// Protections is the table, in the order an order meets its rows. The
// README's table of effects (and README.pt-BR.md's) is made from it, and the lab's switches, the
// scenarios' guard names and the doc pages are checked against it
// (guards_test.go).
var Protections = []Protection{
	{Effect: Charges, Says: "charge the customer", Technique: ChargeClaim,
		SaysPT:  "cobrar o cliente",
		How:     "one charge per order whatever the key: a per-order charge claim (`order_charges`, unique per order) and a gateway key from the order; an order no longer pending never reaches the gateway again",
		HowPT:   "uma cobrança por pedido, qualquer que seja a chave: uma reivindicação de cobrança por pedido (`order_charges`, única por pedido) e uma chave do gateway vinda do pedido; um pedido que não está mais pendente nunca mais chega ao gateway",
		Without: GuardChargeClaim, Guard: "payment.Service.claimCharge", Mistake: "payment.NoChargeClaim", Page: "docs/techniques/idempotency-key.md"},
	{Effect: Charges, Says: "charge again a charge whose answer was lost", Technique: AskFirst,
		SaysPT:  "cobrar de novo uma cobrança cuja resposta se perdeu",
		How:     "an attempt whose outcome is unknown is never sent again blind: the gateway is asked for the order's charges first (`GET /charges?order_id=`), and a `409` of its own type answers when it cannot say",
		HowPT:   "uma tentativa de resultado desconhecido nunca é reenviada às cegas: o gateway é consultado antes sobre as cobranças do pedido (`GET /charges?order_id=`), e um `409` de tipo próprio responde quando ele não sabe dizer",
		Without: GuardAskFirst, Guard: "payment.Service.askFirst", Mistake: "payment.SendBlind", Page: "docs/techniques/ask-first.md"},
	{Effect: Charge, Says: "charge again on a client's retry", Technique: IdempotencyKey,
		SaysPT:  "cobrar de novo numa retentativa do cliente",
		How:     "the `Idempotency-Key` at `POST /orders/{id}/payments`: a retry gets the stored answer, byte for byte",
		HowPT:   "o `Idempotency-Key` em `POST /orders/{id}/payments`: uma retentativa recebe a resposta guardada, byte a byte",
		Without: GuardIdempotencyKey, Guard: "payment.Service.payUnderKey", Mistake: "payment.PayWithoutKey", Page: "docs/techniques/idempotency-key.md"},
	{Effect: Charges, Says: "lose a charge whose answer died with the api", Technique: ChargeRecord,
		SaysPT:  "perder uma cobrança cuja resposta morreu com a api",
		How:     "the signed `payment.succeeded` records its charge on the order's payment intent, so the charge can be refunded and is never made again",
		HowPT:   "o `payment.succeeded` assinado registra a sua cobrança na intenção de pagamento do pedido, então a cobrança pode ser estornada e nunca é feita de novo",
		Without: GuardChargeRecord, Guard: "webhook.RecordCharge", Mistake: "webhook.RecordChargeUnguarded", Page: "docs/techniques/idempotency-key.md"},
	{Effect: PaymentEventAccepted, Says: "accept a payment event", Technique: WebhookInbox,
		SaysPT:  "aceitar um evento de pagamento",
		How:     "webhook inbox by provider event id, in the transaction of the outbox write",
		HowPT:   "inbox de webhooks pelo id do evento no provedor, na transação da escrita no outbox",
		Without: GuardWebhookInbox, Guard: "webhook.RecordEvent", Mistake: "webhook.RecordEventUnguarded", Page: "docs/techniques/inbox.md"},
	{Effect: Paid, Says: "mark the order paid", Technique: StateCheck,
		SaysPT:  "marcar o pedido como pago",
		How:     "state check: `UPDATE ... WHERE status = 'pending'`",
		HowPT:   "checagem de estado: `UPDATE ... WHERE status = 'pending'`",
		Without: GuardStateCheck, Guard: "order.MarkPaid", Mistake: "order.MarkPaidUnguarded", Page: "docs/techniques/state-check.md"},
	{Effect: StockReserved, Says: "reserve a scarce resource (stock)", Technique: Reservation,
		SaysPT:  "reservar um recurso escasso (estoque)",
		How:     "a reservation row per (order, SKU) under a unique key and a guarded decrement (`WHERE available >= quantity`), in the transition's transaction",
		HowPT:   "uma linha de reserva por (pedido, SKU) sob uma chave única e um decremento protegido (`WHERE available >= quantity`), na transação da transição",
		Without: GuardStockReservation, Guard: "stock.Reserve", Mistake: "stock.ReserveUnguarded", Page: "docs/techniques/guarded-counter.md"},
	{Effect: Commission, Says: "release the affiliate commission", Technique: LedgerKey,
		SaysPT:  "liberar a comissão do afiliado",
		How:     "ledger row with a UNIQUE business key, `ON CONFLICT DO NOTHING`",
		HowPT:   "linha no ledger com uma chave de negócio UNIQUE, `ON CONFLICT DO NOTHING`",
		Without: GuardLedgerKey, Guard: "ledger.ReleaseCommission", Mistake: "ledger.ReleaseCommissionUnguarded", Page: "docs/techniques/ledger-key.md"},
	{Effect: ConfirmationEnqueued, Says: "publish the order confirmation", Technique: Outbox,
		SaysPT:  "publicar a confirmação do pedido",
		How:     "transactional outbox, deterministic message id",
		HowPT:   "outbox transacional, id de mensagem determinístico",
		Without: GuardOutbox, Guard: "outbox.Publish", Mistake: "outbox.PublishAfterCommit", Page: "docs/techniques/outbox.md"},
	{Effect: ConfirmationDelivered, Says: "deliver the confirmation once per message", Technique: Inbox,
		SaysPT:  "entregar a confirmação uma vez por mensagem",
		How:     "inbox by (consumer, message id)",
		HowPT:   "inbox por (consumidor, id da mensagem)",
		Without: GuardInbox, Guard: "inbox.Seen", Mistake: "inbox.SeenUnguarded", Page: "docs/techniques/inbox.md"},
	{Effect: NotificationSent, Says: "send the customer notification", Technique: ProviderKey,
		SaysPT:  "enviar a notificação ao cliente",
		How:     "the message id as the provider's Idempotency-Key",
		HowPT:   "o id da mensagem como o Idempotency-Key do provedor",
		Without: GuardProviderKey, Guard: "notify.MessageKey", Mistake: "notify.FreshKey", Page: "docs/techniques/provider-key.md"},
	{Effect: NotificationSent, Says: "e-mail the customer twice about one order", Technique: NotificationClaim,
		SaysPT:  "mandar dois e-mails ao cliente sobre um mesmo pedido",
		How:     "one e-mail per order and template, whatever the message: a claim row under that identity (`notification_claims`, never cleaned) taken before the call, settled after it; a claim whose call got no answer asks the provider first",
		HowPT:   "um e-mail por pedido e modelo, qualquer que seja a mensagem: uma linha de reivindicação com essa identidade (`notification_claims`, nunca limpa) tomada antes da chamada e fechada depois; uma reivindicação cuja chamada ficou sem resposta consulta o provedor antes",
		Without: GuardNotificationClaim, Guard: "notify.Claim", Mistake: "notify.ClaimUnguarded", Page: "docs/techniques/ask-first.md"},
	{Effect: RefundRequested, Says: "refund the order (a short order's compensation, `POST /orders/{id}/refunds`, a `payment.refunded` webhook)", Technique: IntentRow,
		SaysPT: "estornar o pedido (a compensação de um pedido sem estoque, `POST /orders/{id}/refunds`, um webhook `payment.refunded`)",
		How:    "one refund intent per order (`refund_requests`, primary key) written with its message",
		HowPT:  "uma intenção de estorno por pedido (`refund_requests`, chave primária) gravada com a sua mensagem",
		Guard:  "refund.Request", Page: "docs/techniques/compensation.md"},
	{Effect: GatewayRefund, Says: "give the money back", Technique: ProviderKey,
		SaysPT: "devolver o dinheiro",
		How:    "a gateway key from the order (`payment.RefundKey`)",
		HowPT:  "uma chave do gateway vinda do pedido (`payment.RefundKey`)",
		Guard:  "payment.RefundKey", Page: "docs/techniques/provider-key.md"},
	{Effect: RefundFailed, Says: "record a refund the provider refused for good", Technique: StateCheck,
		SaysPT: "registrar um estorno que o provedor recusou de vez",
		How:    "state check: paid -> refund_failed, once, in the transaction of the gateway's answer; a replay of the refund finds it and never asks the gateway again",
		HowPT:  "checagem de estado: paid -> refund_failed, uma vez, na transação da resposta do gateway; uma repetição do estorno o encontra e nunca mais pergunta ao gateway",
		Guard:  "order.MarkRefundFailed", Page: "docs/techniques/compensation.md"},
	{Effect: Refunded, Says: "mark the order refunded", Technique: StateCheck,
		SaysPT:  "marcar o pedido como estornado",
		How:     "state check: pending, paid or refund_failed -> refunded, once; `refunded` is terminal, so a late payment applies nothing",
		HowPT:   "checagem de estado: pending, paid ou refund_failed -> refunded, uma vez; `refunded` é terminal, então um pagamento atrasado não aplica nada",
		Without: GuardStateCheck, Guard: "order.MarkRefunded", Mistake: "order.MarkRefundedUnguarded", Page: "docs/techniques/state-check.md"},
	{Effect: StockReleased, Says: "give the stock back", Technique: Reservation,
		SaysPT:  "devolver o estoque",
		How:     "the reservation rows' `released_at IS NULL`, then the units of those rows only",
		HowPT:   "o `released_at IS NULL` das linhas de reserva, depois as unidades só dessas linhas",
		Without: GuardStockReservation, Guard: "stock.Release", Mistake: "stock.ReleaseUnguarded", Page: "docs/techniques/guarded-counter.md"},
	{Effect: CommissionReversed, Says: "reverse the commission", Technique: LedgerKey,
		SaysPT:  "reverter a comissão",
		How:     "a reversal ledger entry under its own key (order id + entry type), under the order's row lock with the commission",
		HowPT:   "um lançamento de reversão no ledger sob uma chave própria (id do pedido + tipo de lançamento), sob o lock da linha do pedido junto com a comissão",
		Without: GuardLedgerKey, Guard: "ledger.ReverseCommission", Mistake: "ledger.ReverseCommissionUnguarded", Page: "docs/techniques/ledger-key.md"},
	{Effect: RefundConfirmationDelivered, Says: "deliver the refund notice once per message", Technique: Inbox,
		SaysPT:  "entregar o aviso de estorno uma vez por mensagem",
		How:     "inbox by (consumer, message id)",
		HowPT:   "inbox por (consumidor, id da mensagem)",
		Without: GuardInbox, Guard: "inbox.Seen", Mistake: "inbox.SeenUnguarded", Page: "docs/techniques/inbox.md"},
	{Effect: RefundNotified, Says: "send the refund notice", Technique: ProviderKey,
		SaysPT:  "enviar o aviso de estorno",
		How:     "the message id (one per order) as the provider's Idempotency-Key",
		HowPT:   "o id da mensagem (um por pedido) como o Idempotency-Key do provedor",
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
