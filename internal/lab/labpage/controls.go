package labpage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// labDone is the answer of every lab control: what it did, and the command
// line that does the same without the page.
type labDone struct {
	OK     bool            `json:"ok"`
	CLI    string          `json:"cli"`
	Output string          `json:"output,omitempty"` // what the command printed, or its error
	Result json.RawMessage `json:"result,omitempty"` // the answer of the endpoint called
}

// labRedeliverRequest is the body of POST /lab/orders/{id}/redeliver: the
// fake gateway's POST /charges/{charge}/redeliver body, passed on as it is,
// or with "refund": true its POST /refunds/{refund}/redeliver (the
// payment.refunded webhook of the order's refund, exercise 11).
type labRedeliverRequest struct {
	fakesRedeliver
	Refund bool `json:"refund"`
}

// fakesRedeliver is the body of the fakes' redeliver endpoints.
type fakesRedeliver struct {
	Count      int  `json:"count"`
	Concurrent bool `json:"concurrent"`
	NewEventID bool `json:"new_event_id"`
}

// handleLabRedeliver makes the fake gateway deliver the webhook of the
// order's charge count more times: with the same event id (a provider
// retrying), or each with a new one (a provider emitting several events for
// one payment), one after the other or all at once.
func (p *Page) handleLabRedeliver(w http.ResponseWriter, r *http.Request) {
	id, err := orderID(r)
	if err != nil {
		p.problem(w, r, err)
		return
	}
	var req labRedeliverRequest
	if err := readJSON(w, r, &req); err != nil {
		p.problem(w, r, err)
		return
	}
	if _, err := p.getOrder(r.Context(), id); err != nil {
		p.problem(w, r, err)
		return
	}
	body, _ := json.Marshal(req.fakesRedeliver)
	if req.Refund {
		refundID, err := p.orderRefundID(r, id)
		if err != nil {
			p.problem(w, r, err)
			return
		}
		p.labForward(w, r, "/refunds/"+refundID+"/redeliver", body)
		return
	}
	chargeID, err := p.lq.LabOrderChargeID(r.Context(), id)
	if errors.Is(err, pgx.ErrNoRows) {
		p.problem(w, r, labError{http.StatusConflict, "No charge to redeliver", "the gateway has confirmed no charge of this order yet: pay it first"})
		return
	}
	if err != nil {
		p.problem(w, r, fmt.Errorf("lab: charge of %s: %w", id, err))
		return
	}
	p.labForward(w, r, "/charges/"+chargeID+"/redeliver", body)
}

// orderRefundID is the id of the fake gateway's refund of the order, read
// from its GET /refunds (the whole list: its ?order_id= search may lag on
// purpose); a labError (409) when the gateway has made none.
func (p *Page) orderRefundID(r *http.Request, id uuid.UUID) (string, error) {
	var refunds []struct {
		ID      string `json:"id"`
		OrderID string `json:"order_id"`
	}
	if err := p.fakesJSON(r.Context(), "/refunds", &refunds); err != nil {
		return "", p.errFakesUnreachable(err)
	}
	for _, rf := range refunds {
		if rf.OrderID == id.String() {
			return rf.ID, nil
		}
	}
	return "", labError{http.StatusConflict, "No refund to redeliver",
		"the gateway has made no refund of this order yet: refund it first (POST /orders/{id}/refunds), and wait for the worker to ask the gateway"}
}

// handleLabProvider replaces a fake's control settings (fail_next,
// fail_status, retry_after_s, delay_ms, and for the gateway
// duplicate_webhooks): the body goes to POST /control/{provider} as it is,
// and the fake checks it.
func (p *Page) handleLabProvider(w http.ResponseWriter, r *http.Request) {
	provider := chi.URLParam(r, "provider")
	if !slices.Contains(labProviders, provider) {
		p.problem(w, r, badRequest(fmt.Sprintf("provider %q: want one of %s", provider, strings.Join(labProviders, ", "))))
		return
	}
	body, err := readBody(w, r, maxJSONBody)
	if err != nil {
		p.problem(w, r, err)
		return
	}
	p.labForward(w, r, "/control/"+provider, body)
}

// labForward POSTs body to the fakes' path and answers with what they said
// and the curl line that says the same.
func (p *Page) labForward(w http.ResponseWriter, r *http.Request, path string, body []byte) {
	status, raw, err := p.fakesCall(r.Context(), http.MethodPost, path, body)
	if err != nil {
		p.problem(w, r, p.errFakesUnreachable(err))
		return
	}
	done := labDone{OK: status < 300, CLI: curlLine(http.MethodPost, "$FAKES_URL", path, body)}
	if json.Valid(raw) {
		done.Result = raw
	} else {
		done.Output = string(raw)
	}
	if !done.OK {
		done.Output = fmt.Sprintf("the fakes answered %d: %s", status, raw)
	}
	writeJSON(w, http.StatusOK, done)
}

// handleLabReplay re-enqueues through the reprocess tool: one order's
// order_paid, one message of the outbox, or the poison queue. The tool's
// plan and progress are the answer's output.
func (p *Page) handleLabReplay(w http.ResponseWriter, r *http.Request) {
	var t ReplayTarget
	if err := readJSON(w, r, &t); err != nil {
		p.problem(w, r, err)
		return
	}
	var cli string
	chosen := 0
	if t.OrderID != uuid.Nil {
		chosen++
		cli = "orderpaid reprocess --order " + t.OrderID.String()
	}
	if t.MessageID != "" {
		chosen++
		cli = "orderpaid reprocess --message " + t.MessageID
	}
	if t.Poison {
		chosen++
		cli = "orderpaid reprocess --poison"
	}
	if chosen != 1 {
		p.problem(w, r, badRequest(`give exactly one of "order_id", "message_id", "poison": true`))
		return
	}
	if p.Replay == nil {
		p.problem(w, r, labError{http.StatusNotImplemented, "No replay here", "this process cannot replay: run " + cli})
		return
	}
	var out bytes.Buffer
	err := p.Replay(r.Context(), t, &out)
	done := labDone{OK: err == nil, CLI: cli, Output: out.String()}
	if err != nil {
		done.Output += err.Error()
	}
	writeJSON(w, http.StatusOK, done)
}

// handleLabGuard switches one guard off ({"off":true}) or back on, in the
// process's switch set: the api's and the worker's guards alike, from their
// next step on. Only a workshop process that runs both has one.
func (p *Page) handleLabGuard(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "guard")
	var req struct {
		Off bool `json:"off"`
	}
	if err := readJSON(w, r, &req); err != nil {
		p.problem(w, r, err)
		return
	}
	sw := p.Switches
	if !sw.CanSwitch() {
		p.problem(w, r, labError{http.StatusConflict, "Guards cannot be switched here", p.GuardsNote})
		return
	}
	if !req.Off && strings.Contains(","+sw.Fixed()+",", ","+name+",") {
		p.problem(w, r, labError{http.StatusConflict, "Switched off from the start",
			"--without " + name + " switched it off when the process started: restart without it"})
		return
	}
	if err := sw.Switch(name, req.Off); err != nil {
		p.problem(w, r, badRequest(err.Error()))
		return
	}
	if req.Off {
		p.Logger.WarnContext(r.Context(), "guard switched off from the lab page: effects may happen twice", "guard", name)
	} else {
		p.Logger.InfoContext(r.Context(), "guard switched back on from the lab page", "guard", name)
	}
	body, _ := json.Marshal(req)
	writeJSON(w, http.StatusOK, labDone{OK: true, Output: "guards switched off now: " + strings.Join(sw.OffNow(), ", "),
		CLI: curlLine(http.MethodPost, "$API_URL", "/lab/guards/"+name, body) + "   (or restart: orderpaid-lab all --without " + name + ")"})
}
