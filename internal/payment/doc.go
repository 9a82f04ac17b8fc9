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
//     and its lock expired, a recovery that exactly one caller wins. Then, in
//     the same transaction, charge.go claims the order's charge.
//  2. gateway.go: the charge, sent with an Idempotency-Key derived from the
//     order's charge attempt (key.go). If we crashed after phase 1, or the
//     gateway's answer was lost, whichever request takes the charge over
//     sends the same key and the gateway answers from its own store: one
//     charge.
//  3. complete.go, one transaction: store the response (a success, or a
//     refusal that would repeat) and settle the order's charge, or release
//     both after an answer that settles nothing so the retry can run at once.
//
// # The effect, not the request: one charge per order
//
// The key identifies one logical request, and two different keys are two
// requests: a client that mints a new key per retry, a second browser tab, an
// app that lost its key. So the key is not what protects the charge. An
// order_charges row per order (charge.go) is the order's payment intent:
// exactly one request, whatever its key, holds the right to call the gateway;
// another key meanwhile gets 409 "in flight", and after the charge 409 "order
// already paid", stored under that key. The Idempotency-Key keeps its Stripe
// semantics on top of it: the stored response, 422 on a mismatch, 409 while
// in flight.
//
// cleaner.go deletes completed keys after the retention period (24h by
// default, as Stripe does); a key is a promise about retries, not a record
// kept forever. The order's charge row stays with the order.
//
// # What it does not protect
//
// The gateway's own store is the last line: a request whose gateway call is
// still running when its lock expires (LockTimeout, kept well above the
// gateway timeout) lets another request take the charge over and call with
// the same key; one charge, because the gateway dedupes it. A gateway that
// forgot the key (its retention is finite, 24h at Stripe) would charge a
// charge taken over after that long. And a refund is another effect, with its
// own key.
package payment
