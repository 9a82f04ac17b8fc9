// Package payment charges an order once, however often the client sends
// POST /orders/{id}/payments.
//
// # Which effect must never happen twice
//
// Charging the customer. A client that times out, or whose connection drops
// after the gateway took the money, cannot know whether the charge happened;
// the only safe thing it can do is send the same request again. Without a
// guard every retry is a new charge.
//
// # The technique: a Stripe-style Idempotency-Key
//
// The client sends an Idempotency-Key header, the same on every retry of one
// logical payment. [Service.Pay] runs Brandur Leach's "atomic phases"
// (brandur.org/idempotency-keys), each a separate step with the gateway call
// in the middle, outside any transaction:
//
//  1. claim.go, one transaction: load the order, insert the key with a lock
//     (locked_until). A key seen before is answered from the store: its
//     stored response (replay), 422 when the request differs (fingerprint.go),
//     409 while another request holds its lock, or, when that request crashed
//     and its lock expired, a recovery that exactly one caller wins.
//  2. gateway.go: the charge, sent with an Idempotency-Key derived from ours
//     (key.go). If we crashed after phase 1, or the gateway's answer was
//     lost, the recovered retry sends the same derived key and the gateway
//     answers from its own store: one charge.
//  3. complete.go, one statement: store the response (a success, or a refusal
//     that would repeat), or release the key after a transient failure so the
//     retry can run at once.
//
// cleaner.go deletes completed keys after the retention period (24h by
// default, as Stripe does); a key is a promise about retries, not a record
// kept forever.
//
// # What it does not protect
//
// The key identifies one logical request. Two different keys are two
// requests. A new key on an order that is already paid, or that another key
// already charged, gets a stored 409 "order already paid" (paid.go), but two
// different keys racing for the same unpaid order both reach the gateway:
// closing that window needs a lock per order, not per key.
package payment
