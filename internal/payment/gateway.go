package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// maxGatewayBody bounds how much of a gateway answer is read and stored.
const maxGatewayBody = 1 << 20

// defaultGatewayTimeout bounds one charge call when NewGatewayClient is given
// no client. It must stay well below Config.LockTimeout: a call still running
// when the key's lock expires lets a retry recover the key and call too (the
// gateway dedupes that, but it is wasted work).
const defaultGatewayTimeout = 10 * time.Second

// GatewayClient calls the payment gateway's POST /charges and POST /refunds.
type GatewayClient struct {
	baseURL string
	hc      *http.Client
}

// NewGatewayClient returns a client for the gateway at baseURL (such as
// FAKES_URL). A nil hc gets a client with a 10s timeout.
func NewGatewayClient(baseURL string, hc *http.Client) *GatewayClient {
	if hc == nil {
		hc = &http.Client{Timeout: defaultGatewayTimeout}
	}
	return &GatewayClient{baseURL: strings.TrimRight(baseURL, "/"), hc: hc}
}

// ChargeRequest is the body of the gateway's POST /charges.
type ChargeRequest struct {
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
}

// RefundRequest is the body of the gateway's POST /refunds: it refunds a
// charge, named by the gateway's charge id.
type RefundRequest struct {
	ChargeID    string `json:"charge_id"`
	AmountCents int64  `json:"amount_cents"`
}

// GatewayAnswer is the gateway's HTTP answer to a charge, whatever its status.
type GatewayAnswer struct {
	Status int
	Body   []byte
	// Replayed: the gateway answered from its idempotency store
	// (Idempotent-Replayed: true); this call charged nothing.
	Replayed bool
}

// Charge sends one POST /charges with idempotencyKey in the Idempotency-Key
// header. Every HTTP answer, 4xx and 5xx included, is returned as a
// GatewayAnswer; the error is for calls that got no answer (connection
// refused, timeout, cancelled context), after which the charge may or may not
// have happened.
func (c *GatewayClient) Charge(ctx context.Context, idempotencyKey string, req ChargeRequest) (GatewayAnswer, error) {
	return c.post(ctx, "/charges", idempotencyKey, req)
}

// Refund sends one POST /refunds with idempotencyKey in the Idempotency-Key
// header. As with Charge, every HTTP answer is returned as a GatewayAnswer,
// and the error is for a call that got no answer, after which the refund
// may or may not have happened: retry it with the same key.
func (c *GatewayClient) Refund(ctx context.Context, idempotencyKey string, req RefundRequest) (GatewayAnswer, error) {
	return c.post(ctx, "/refunds", idempotencyKey, req)
}

// post POSTs body as JSON to path under idempotencyKey and returns the
// gateway's answer, whatever its status.
func (c *GatewayClient) post(ctx context.Context, path, idempotencyKey string, body any) (GatewayAnswer, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return GatewayAnswer{}, fmt.Errorf("encode %s request: %w", path, err)
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.baseURL+path, bytes.NewReader(payload))
	if err != nil {
		return GatewayAnswer{}, fmt.Errorf("build %s request: %w", path, err)
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Idempotency-Key", idempotencyKey)
	resp, err := c.hc.Do(httpReq)
	if err != nil {
		return GatewayAnswer{}, fmt.Errorf("call payment gateway: %w", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxGatewayBody))
	if err != nil {
		return GatewayAnswer{}, fmt.Errorf("read payment gateway answer (status %d): %w", resp.StatusCode, err)
	}
	return GatewayAnswer{Status: resp.StatusCode, Body: answer, Replayed: resp.Header.Get("Idempotent-Replayed") == "true"}, nil
}

// recordCall writes the gateway's answer to gateway_charge_calls; no answer
// (Status 0), nothing: the retry, under the same key, learns what happened.
func recordCall(ctx context.Context, q *queries.Queries, orderID uuid.UUID, gatewayKey string, answer GatewayAnswer) error {
	if answer.Status == 0 {
		return nil
	}
	err := q.GatewayChargeCallInsert(ctx, queries.GatewayChargeCallInsertParams{
		OrderID: orderID, GatewayKey: gatewayKey, Status: int32(answer.Status),
		ChargeID: answeredChargeID(answer), Replayed: answer.Replayed,
	})
	if err != nil {
		return fmt.Errorf("record the gateway's answer: %w", err)
	}
	return nil
}

// answeredChargeID is the charge id a 2xx answer names, else NULL.
func answeredChargeID(answer GatewayAnswer) pgtype.Text {
	var charge struct {
		ID string `json:"id"`
	}
	if answer.Status/100 == 2 && json.Unmarshal(answer.Body, &charge) == nil && charge.ID != "" {
		return pgtype.Text{String: charge.ID, Valid: true}
	}
	return pgtype.Text{}
}

// ChargeKey is the gateway's Idempotency-Key for an order's charge attempt.
//
// Effect protected: the charge, across lost answers, crashes and new keys.
// It comes from the order's payment intent, never from a request: whichever
// request holds the attempt, the gateway sees one key and makes one charge.
// Only a refusal for good moves the order to its next attempt and key.
func ChargeKey(orderID uuid.UUID, attempt int32) string {
	return fmt.Sprintf("order:%s:charge:%d", orderID, attempt)
}

// RefundKey is the gateway's Idempotency-Key for an order's refund.
//
// Effect protected: the refund. Like ChargeKey it comes from the order's
// intent (its one refund request), never from a delivery: a redelivery, a
// crash before the answer's record, two workers racing all send this key,
// and the gateway refunds once.
func RefundKey(orderID uuid.UUID) string {
	return fmt.Sprintf("order:%s:refund", orderID)
}

// GatewayKey is the gateway key with the per-order guard off (NoChargeClaim):
// the client's key within its scope (the customer), "<scope>:<key>".
//
// Alone it protects the charge across our own crash: the retry that recovers
// the key sends the same derived key and gets the first charge back. A second
// key for the same order is a second charge; hence ChargeKey. The scope is
// escaped (":" becomes "%3A") so the first ":" ends it: customer "a" with key
// "b:c" and customer "a:b" with key "c" do not share a charge.
func GatewayKey(scope, key string) string {
	return url.QueryEscape(scope) + ":" + key
}
