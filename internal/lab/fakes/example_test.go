package fakes_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/orderpaid/orderpaid/internal/lab/fakes"
)

// A client that times out retries with the same Idempotency-Key: the
// gateway answers from its store and the customer is charged once.
func ExampleNew() {
	gw := fakes.NewGateway(fakes.GatewayConfig{}) // no WebhookURL: no webhooks
	defer gw.Close()
	srv := httptest.NewServer(fakes.New(gw, fakes.NewNotifier()))
	defer srv.Close()

	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/charges",
			strings.NewReader(`{"order_id":"o1","amount_cents":10000,"currency":"BRL"}`))
		req.Header.Set("Idempotency-Key", "order-o1-payment")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, "replayed:", resp.Header.Get("Idempotent-Replayed") == "true")
	}
	fmt.Println("charges:", len(gw.Charges()))
	// Output:
	// 201 replayed: false
	// 201 replayed: true
	// 201 replayed: true
	// charges: 1
}
