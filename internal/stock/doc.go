// Package stock holds the one scarce resource of the flow: units of a SKU,
// taken once per paid order.
//
// # Which effect must never happen twice
//
// Taking an order's items out of stock. The order_paid consumer runs once
// per delivery, and deliveries repeat; a handler that decrements a counter
// (UPDATE stock SET available = available - 1) decrements it once per
// delivery and oversells. That is the most common idempotency bug there is:
// an increment or decrement where the effect should have been recorded once.
//
// # The technique: a reservation row under a unique key, and a guarded
// decrement, in one transaction
//
// Reserve (reserve.go) inserts one reservation row per (order, SKU) with
// ON CONFLICT DO NOTHING and decrements the counter only for a row it
// inserted, with UPDATE ... WHERE available >= quantity: the first delivery
// reserves, every later one meets the rows and leaves the counter alone; two
// orders racing for the last unit never both get it (READ COMMITTED checks the
// WHERE clause again after waiting); SKUs are taken in a fixed order, so two
// multi-item orders cannot deadlock.
//
// The admin call that fills the stock, PUT /stock/{sku} (Set), is a set of an
// absolute value, not an increment: sending it twice leaves one value.
package stock
