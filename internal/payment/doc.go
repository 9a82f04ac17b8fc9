// Package payment charges an order once, however often the client sends
// POST /orders/{id}/payments: the effect it protects is the customer's money.
//
// [Service.Pay] (pay.go) runs three atomic phases, the gateway call outside
// any transaction:
//
//  1. claim.go: the Idempotency-Key, claimed under a lock or answered from
//     the store; then charge.go: the order's one charge, whatever the key;
//  2. gateway.go: the charge, under a gateway key from the order (ChargeKey);
//  3. complete.go: the gateway's answer stored, or the key and charge released.
//
// The key protects the request (a retry gets the stored response); the
// order_charges row protects the charge (a new key never charges it again).
// Their mistakes, PayWithoutKey and NoChargeClaim, stand beside them for the
// lab. service.go holds the types and checks the request, cleaner.go
// forgets old keys, and the reasoning is in docs/techniques/idempotency-key.md.
package payment
