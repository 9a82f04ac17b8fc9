package payment_test

import (
	"testing"

	"github.com/orderpaid/orderpaid/internal/payment"
)

func TestGatewayKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ scope, key, want string }{
		{"c1", "k1", "c1:k1"},
		{"a", "b:c", "a:b:c"},
		{"a:b", "c", "a%3Ab:c"},
		{"a b", "k", "a+b:k"},
	} {
		if got := payment.GatewayKey(tc.scope, tc.key); got != tc.want {
			t.Errorf("GatewayKey(%q, %q) = %q, want %q", tc.scope, tc.key, got, tc.want)
		}
	}
}
