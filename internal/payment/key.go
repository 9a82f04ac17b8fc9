package payment

import (
	"fmt"
	"net/url"
)

// MaxKeyLength is the longest Idempotency-Key accepted, as at Stripe.
const MaxKeyLength = 255

// checkKey refuses a key that cannot be stored or passed on: empty, too
// long, or with characters outside printable ASCII (a NUL byte, for one,
// cannot be stored in PostgreSQL text).
func checkKey(key string) error {
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

// GatewayKey is the Idempotency-Key sent to the payment gateway for the
// client's key within scope (the customer): "<scope>:<key>".
//
// Effect protected: the charge, across our own crash. If this process dies
// after phase 1 committed, or after the gateway charged but before phase 3
// stored the answer, the retry that recovers the key sends the gateway the
// same derived key and gets the first charge back instead of making a second.
// A random key per attempt would charge once per attempt.
//
// The key is deterministic and includes the scope, so two customers who
// happen to choose the same key never share a charge. The scope is escaped
// (a ":" becomes "%3A") so that the first ":" always ends it: customer "a"
// with key "b:c" and customer "a:b" with key "c" get different gateway keys.
func GatewayKey(scope, key string) string {
	return url.QueryEscape(scope) + ":" + key
}
