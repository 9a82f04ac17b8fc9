package payment_test

import (
	"fmt"

	"github.com/orderpaid/orderpaid/internal/payment"
)

// A body that differs only in whitespace or spells out a default decodes to
// the same value, and so gets the same fingerprint; a misspelt field is
// refused instead of silently ignored.
func ExampleDecodeBody() {
	for _, raw := range []string{
		``,
		`{ "payment_method": "pm_card" }`,
		`{"payment_method":"pm_visa"}`,
		`{"paymentMethod":"pm_visa"}`,
	} {
		body, err := payment.DecodeBody([]byte(raw))
		if err != nil {
			fmt.Printf("%q -> error: %v\n", raw, err)
			continue
		}
		fmt.Printf("%q -> %s\n", raw, body.PaymentMethod)
	}
	// Output:
	// "" -> pm_card
	// "{ \"payment_method\": \"pm_card\" }" -> pm_card
	// "{\"payment_method\":\"pm_visa\"}" -> pm_visa
	// "{\"paymentMethod\":\"pm_visa\"}" -> error: invalid request body: field "paymentMethod" is unknown (names are matched exactly, case included)
}

// The gateway sees the customer and the client's key together, so a key
// chosen by two customers is two charges, and a retry after a crash is one.
func ExampleGatewayKey() {
	fmt.Println(payment.GatewayKey("customer-42", "3f1c9a7e-checkout"))
	// Output:
	// customer-42:3f1c9a7e-checkout
}
