package webhook_test

import (
	"errors"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/webhook"
)

// FuzzVerify: whatever the header and body, Verify never panics, accepts
// only a header it could have produced itself, and refuses with one of its
// documented errors.
func FuzzVerify(f *testing.F) {
	secret := []byte("fuzz-secret")
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt_1","type":"payment.succeeded","data":{"order_id":"7b0e5d6e-8a4f-4d7e-9d43-3c1f5a2b9e10","amount_cents":100}}`)
	f.Add(webhook.Sign(secret, now, body), body)
	f.Add("t=1800000000,v1=00", body)
	f.Add("", []byte{})
	f.Add("t=,v1=", []byte("x"))
	f.Add("v1=abc,t=1800000000,v1=def", body)
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := webhook.Verify(secret, header, body, now, webhook.DefaultTolerance)
		if err == nil {
			if header != webhook.Sign(secret, now, body) && !signedWithin(secret, header, body, now) {
				t.Fatalf("accepted a header it did not produce: %q", header)
			}
			return
		}
		for _, known := range []error{webhook.ErrSignatureMissing, webhook.ErrSignatureMalformed, webhook.ErrSignatureExpired, webhook.ErrSignatureMismatch} {
			if errors.Is(err, known) {
				return
			}
		}
		t.Fatalf("undocumented error %v", err)
	})
}

// signedWithin reports whether header carries a valid v1 signature for some
// timestamp in the tolerance window (a header may list several v1 values).
func signedWithin(secret []byte, header string, body []byte, now time.Time) bool {
	for d := -webhook.DefaultTolerance; d <= webhook.DefaultTolerance; d += time.Second {
		if webhook.Verify(secret, webhook.Sign(secret, now.Add(d), body), body, now, webhook.DefaultTolerance) == nil {
			return true
		}
	}
	return false
}

// FuzzParse: Parse never panics, and what it accepts is a complete event.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"id":"evt_1","type":"payment.succeeded","data":{"order_id":"7b0e5d6e-8a4f-4d7e-9d43-3c1f5a2b9e10","amount_cents":100}}`))
	f.Add([]byte(`{"id":"evt_2","type":"payment.refunded","data":{}}`))
	f.Add([]byte(`{"id":"evt_3","type":"payment.succeeded","data":{"order_id":"x"}}`))
	f.Add([]byte(`{"id":1}`))
	f.Add([]byte(`{} {}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := webhook.Parse(body)
		if err != nil {
			if !errors.Is(err, webhook.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if ev.ID == "" || ev.Type == "" {
			t.Fatalf("accepted an incomplete event: %+v", ev)
		}
		if ev.Type == webhook.EventPaymentSucceeded && (ev.Data.AmountCents <= 0 || ev.Data.OrderID.String() == "00000000-0000-0000-0000-000000000000") {
			t.Fatalf("accepted a payment event without order or amount: %+v", ev)
		}
	})
}
