package payment

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/uuid"
)

// problem is an RFC 9457 problem detail, the body of every stored refusal.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// problemBody encodes an application/problem+json body.
func problemBody(status int, title, detail string) []byte {
	b, _ := json.Marshal(problem{Type: "about:blank", Title: title, Status: status, Detail: detail}) // strings and an int always encode
	return b
}

// refusedResponse is the 402 stored when the gateway refused the charge for
// good. Its detail repeats the gateway's own, when the gateway sent a
// problem+json body.
func refusedResponse(answer GatewayAnswer) Response {
	var gw problem
	reason := http.StatusText(answer.Status)
	if json.Unmarshal(answer.Body, &gw) == nil && gw.Detail != "" {
		reason = gw.Detail
	}
	detail := fmt.Sprintf("the payment gateway refused the charge (%d): %s", answer.Status, reason)
	return Response{Status: http.StatusPaymentRequired, Body: problemBody(http.StatusPaymentRequired, "Payment refused", detail)}
}

// chargedResponse is the 201 for a successful charge; charge is the
// gateway's charge object, kept as it came.
func chargedResponse(orderID uuid.UUID, charge []byte) Response {
	body, _ := json.Marshal(struct { // valid JSON (checked by the caller) always encodes
		OrderID uuid.UUID       `json:"order_id"`
		Status  string          `json:"status"`
		Charge  json.RawMessage `json:"charge"`
	}{orderID, "charged", charge})
	return Response{Status: http.StatusCreated, Body: body}
}
