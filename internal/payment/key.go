package payment

import (
	"fmt"
	"net/url"

	"github.com/google/uuid"
)

// MaxKeyLength is the longest Idempotency-Key accepted, as at Stripe.
const MaxKeyLength = 255

// CheckKey refuses a key that cannot be stored or passed on: empty, too
// long, or with characters outside printable ASCII (a NUL byte, for one,
// cannot be stored in PostgreSQL text).
func CheckKey(key string) error {
	if key == "" {
		return ErrKeyMissing
	}
	if len(key) > MaxKeyLength {
		return fmt.Errorf("%w: longer than %d characters", ErrKeyMissing, MaxKeyLength)
	}
	for i := range len(key) {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("%w: byte %d is not printable ASCII", ErrKeyMissing, i)
		}
	}
	return nil
}

// ChargeKey is the Idempotency-Key sent to the payment gateway for an
// order's charge attempt: "order:<order id>:charge:<attempt>".
//
// Effect protected: the charge, across lost answers, crashes and new keys.
// It comes from the order's payment intent, never from a request: whichever
// request holds the attempt (the first one, its retry, or another key's that
// took over after a crash or a timeout), the gateway sees one key and makes
// one charge. Only a refusal for good moves the order to its next attempt,
// and so to a new key (charge.go).
func ChargeKey(orderID uuid.UUID, attempt int32) string {
	return fmt.Sprintf("order:%s:charge:%d", orderID, attempt)
}

// RefundKey is the Idempotency-Key sent to the payment gateway for an
// order's refund: "order:<order id>:refund".
//
// Effect protected: the refund, money given back, as irreversible as the
// charge. Like ChargeKey it comes from the order's intent (its one refund
// request, refund_requests), never from a delivery or a request: the
// refund_requested message redelivered, a worker that crashed between the
// gateway's answer and its record, two workers racing: each sends this key,
// and the gateway refunds once and answers the others from its store.
func RefundKey(orderID uuid.UUID) string {
	return fmt.Sprintf("order:%s:refund", orderID)
}

// GatewayKey is the Idempotency-Key a request would send to the payment
// gateway with the per-order guard switched off (--without charge-claim, NoChargeClaim):
// the client's key within scope (the customer), "<scope>:<key>".
//
// What it protects, alone: the charge, across our own crash. If this process dies
// after phase 1 committed, or after the gateway charged but before phase 3
// stored the answer, the retry that recovers the key sends the gateway the
// same derived key and gets the first charge back instead of making a second.
// A random key per attempt would charge once per attempt. What it does not
// protect: a second key for the same order is a second gateway key, and so a
// second charge; that is why the guarded path uses ChargeKey.
//
// The key is deterministic and includes the scope, so two customers who
// happen to choose the same key never share a charge. The scope is escaped
// (a ":" becomes "%3A") so that the first ":" always ends it: customer "a"
// with key "b:c" and customer "a:b" with key "c" get different gateway keys.
func GatewayKey(scope, key string) string {
	return url.QueryEscape(scope) + ":" + key
}
