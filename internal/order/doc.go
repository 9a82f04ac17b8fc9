// Package order owns the order and its transitions, each a state check: the
// UPDATE carries the expected current state in its WHERE clause, so the
// database, not the handler, decides which of several concurrent or
// repeated attempts moves the order (markpaid.go).
//
// The transitions, each at most once per order:
//
//	pending       -> paid           MarkPaid: the payment event
//	pending       -> refunded       MarkRefunded: the provider's refund came before its payment
//	paid          -> refunded       MarkRefunded: our refund, or the provider's
//	paid          -> refund_failed  MarkRefundFailed: the provider refused our refund for good
//	refund_failed -> refunded       MarkRefunded: a person refunded it in the provider's dashboard
//	                                (its payment.refunded, or orderpaid reconcile, records it)
//
// refunded is terminal: a late payment event answers not_applicable.
// refund_failed is not pending either: a late payment event answers
// already_applied (the order was paid, and its money is still with the
// merchant) and changes nothing, and a replay of the refund does not ask
// the gateway again (internal/consumer, HandleRefundRequested).
package order
