package payment_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/payment"
)

func TestDecodeBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       string // payment method on success
		wantErr    string // part of the error message on failure
	}{
		{name: "empty body takes the defaults", body: "", want: "pm_card"},
		{name: "whitespace is an empty body", body: " \r\n\t", want: "pm_card"},
		{name: "empty object takes the defaults", body: "{}", want: "pm_card"},
		{name: "payment method", body: `{"payment_method":"pm_visa_4242"}`, want: "pm_visa_4242"},
		{name: "whitespace around fields", body: "{ \"payment_method\" :\n\"pm_card\" }\n", want: "pm_card"},
		{name: "number for a string", body: `{"payment_method":42}`, wantErr: `field "payment_method" must be a string`},
		{name: "null for a string", body: `{"payment_method":null}`, wantErr: "payment_method: must be a string"},
		{name: "empty payment method", body: `{"payment_method":""}`, wantErr: "payment_method: must be pm_"},
		{name: "payment method without prefix", body: `{"payment_method":"card"}`, wantErr: "payment_method: must be pm_"},
		{name: "prefix alone", body: `{"payment_method":"pm_"}`, wantErr: "payment_method: must be pm_"},
		{name: "space in payment method", body: `{"payment_method":"pm_a b"}`, wantErr: "payment_method: must be pm_"},
		{name: "payment method too long", body: `{"payment_method":"pm_` + strings.Repeat("a", 62) + `"}`, wantErr: "payment_method: must be pm_"},
		{name: "unknown field", body: `{"amount_cents":1}`, wantErr: `field "amount_cents" is unknown`},
		{name: "field names are exact", body: `{"Payment_Method":"pm_card"}`, wantErr: `field "Payment_Method" is unknown (names are matched exactly`},
		{name: "second object", body: `{}{}`, wantErr: "unexpected data after the JSON object"},
		{name: "trailing garbage", body: `{"payment_method":"pm_card"} x`, wantErr: "unexpected data after the JSON object"},
		{name: "array", body: `[]`, wantErr: "must be a JSON object"},
		{name: "null", body: `null`, wantErr: "must be a JSON object"},
		{name: "string", body: `"pm_card"`, wantErr: "must be a JSON object"},
		{name: "truncated", body: `{"payment_method":`, wantErr: "malformed JSON"},
		{name: "syntax error", body: `{"payment_method" "pm_card"}`, wantErr: "malformed JSON at byte"},
		{name: "a field twice: the second must not win", body: `{"payment_method":"pm_a","payment_method":"pm_b"}`, wantErr: "payment_method"},
		{name: "invalid UTF-8", body: "{\"payment_method\":\"pm_\xff\"}", wantErr: "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := payment.DecodeBody([]byte(tc.body))
			if tc.wantErr != "" {
				if !errors.Is(err, payment.ErrInvalidBody) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("DecodeBody(%q) error = %v, want ErrInvalidBody containing %q", tc.body, err, tc.wantErr)
				}
				return
			}
			if err != nil || got.PaymentMethod != tc.want {
				t.Fatalf("DecodeBody(%q) = %+v, %v; want payment method %q", tc.body, got, err, tc.want)
			}
		})
	}
}

// FuzzDecodeBody checks that DecodeBody never panics, that every refusal
// wraps ErrInvalidBody, and that an accepted body re-encodes to a body that
// decodes to the same value (the canonical form the fingerprint hashes).
// Seeds: testdata/fuzz/FuzzDecodeBody.
func FuzzDecodeBody(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := payment.DecodeBody(b)
		if err != nil {
			if !errors.Is(err, payment.ErrInvalidBody) {
				t.Fatalf("error %v does not wrap ErrInvalidBody", err)
			}
			return
		}
		canonical, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		again, err := payment.DecodeBody(canonical)
		if err != nil || again != body {
			t.Fatalf("canonical %s decodes to %+v, %v; want %+v", canonical, again, err, body)
		}
	})
}
