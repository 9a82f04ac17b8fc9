// Package refund records an order's one refund intent: the customer asked
// for the money back (POST /orders/{id}/refunds), or a paid order cannot be
// fulfilled and is compensated (the consumer of order_paid, out of stock).
//
// Effect protected: the refund itself, money given back. Whoever asks and
// however often, an order has one row in refund_requests (its primary key)
// and one refund_requested message written with it, in the same
// transaction (the outbox). The consumer of that message asks the gateway
// under a key derived from the order (payment.RefundKey), so the gateway
// refunds once, and applies the refund to the order (internal/consumer,
// refund.go).
//
// A compensation is not a rollback: the charge happened and cannot be
// undone. What the flow does instead is a second effect, the opposite of
// the first (money back, stock back, a reversal entry in the ledger), each
// protected like the effect it compensates.
package refund
