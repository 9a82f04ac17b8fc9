// Package reconcile is the last line of defence: it holds the service's
// record of each order against what the providers recorded, and settles
// what is safe to settle.
//
// Every guard of the project protects an effect while the code runs. None
// answers the question that comes afterwards: does the world agree with the
// database? An api killed between the gateway's answer and storing it, whose
// client gave up and whose webhook never came, leaves an order pending and
// its charge attempt charging, with the customer's money taken. A refund the
// gateway refused for good leaves an order that only a person can settle.
//
// Run reads both records, reports one Finding per discrepancy and, unless
// it is a dry run, settles those that are safe, each under a key, never by
// doing the irreversible thing again: a charge the gateway made is accepted
// as its payment.succeeded would have been (the webhook flow does the rest;
// the webhook inbox keys it), an attempt the gateway never saw is given back
// (the next request takes it over under the same gateway key), a refund the
// gateway made is accepted as its payment.refunded, and a paid order without
// its e-mail gets its one order_confirmed again (its message id is the
// inbox's key and the provider's Idempotency-Key). Each settlement is a
// row of reconcile_actions, keyed by what it settles, so two runs at once
// settle nothing twice. Reconcile never charges, never refunds and never
// sends an e-mail itself.
//
// The technique: docs/techniques/reconcile.md.
package reconcile
