package labpage

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/labqueries"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// How much the page shows.
const (
	labMaxOrders = 12
	labMaxPoison = 20
)

// labState is GET /lab/state: what the page polls. The effects of each order
// are not in it: the page reads them from GET /orders/{id}/audit, the
// audit every curl reads, and draws every key it finds there.
type labState struct {
	Process    string     `json:"process"`
	Broker     string     `json:"broker"`
	FakesURL   string     `json:"fakes_url"`
	Guards     []labGuard `json:"guards"`
	Switchable bool       `json:"switchable"`  // the guards can be switched here
	GuardsNote string     `json:"guards_note"` // why not, when they cannot
	// FaultPoints are the points the page may arm here (POST /lab/faults);
	// empty where it cannot.
	FaultPoints []string                         `json:"fault_points"`
	Orders      []labqueries.LabRecentOrdersRow  `json:"orders"`
	Poison      []labqueries.LabPoisonPendingRow `json:"poison"`
	// Providers holds each fake's current control settings (GET
	// /control/gateway, /control/notifications), by name.
	Providers      map[string]json.RawMessage `json:"providers"`
	ProvidersError string                     `json:"providers_error,omitempty"`
}

// labGuard is one guard and whether it is off now; Fixed: switched off from
// the start (--without), which the page cannot switch back on.
type labGuard struct {
	Name  string `json:"name"`
	Off   bool   `json:"off"`
	Fixed bool   `json:"fixed"`
}

// labProviders are the fakes the page controls, by the name of their control
// endpoint (POST /control/{name}).
var labProviders = []string{"gateway", "notifications"}

func (p *Page) handleLabState(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sw := p.Switches
	st := labState{
		Process: p.Process, Broker: p.Broker, FakesURL: p.FakesURL,
		Switchable: sw.CanSwitch(), GuardsNote: p.GuardsNote,
		Providers: map[string]json.RawMessage{}, FaultPoints: []string{},
	}
	if p.Faults != nil {
		st.FaultPoints = append(st.FaultPoints, p.FaultPoints...)
	}
	fixed := strings.Split(sw.Fixed(), ",")
	for _, name := range effect.GuardNames() {
		st.Guards = append(st.Guards, labGuard{Name: name, Off: sw.Off(name), Fixed: slices.Contains(fixed, name)})
	}
	var err error
	if st.Orders, err = p.lq.LabRecentOrders(ctx, labMaxOrders); err != nil {
		p.problem(w, r, fmt.Errorf("lab: recent orders: %w", err))
		return
	}
	if st.Poison, err = p.lq.LabPoisonPending(ctx, labMaxPoison); err != nil {
		p.problem(w, r, fmt.Errorf("lab: poison queue: %w", err))
		return
	}
	for _, name := range labProviders {
		var settings json.RawMessage
		if err := p.fakesJSON(ctx, "/control/"+name, &settings); err != nil {
			st.ProvidersError = p.errFakesUnreachable(err).detail
			break
		}
		st.Providers[name] = settings
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, st)
}

// labEvent is one line of an order's timeline.
type labEvent struct {
	At    time.Time `json:"at"`
	Kind  string    `json:"kind"` // webhook, delivery, execution, gateway, notification, poison
	Title string    `json:"title"`
	// Detail adds what the line needs (a key, a reason); MessageID is the
	// message a control can re-enqueue; Outcomes are a run's guard answers
	// (effect.Result values) and Error its failure.
	Detail    string          `json:"detail,omitempty"`
	MessageID string          `json:"message_id,omitempty"`
	Outcomes  json.RawMessage `json:"outcomes,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// labTimeline is GET /lab/orders/{id}/timeline.
type labTimeline struct {
	Order  queries.Order `json:"order"`
	Events []labEvent    `json:"events"`
	Notes  []string      `json:"notes"` // what could not be read
}

// handleLabTimeline is what happened to one order, oldest first: the webhook
// events the inbox accepted and each delivery attempt of them (from the fake
// gateway's log), every consumer run with each guard's answer, the calls to
// the providers (charges, refunds, notifications) and the order's messages in
// the poison queue.
func (p *Page) handleLabTimeline(w http.ResponseWriter, r *http.Request) {
	id, err := orderID(r)
	if err != nil {
		p.problem(w, r, err)
		return
	}
	o, err := p.getOrder(r.Context(), id)
	if err != nil {
		p.problem(w, r, err)
		return
	}
	tl := labTimeline{Order: o, Events: []labEvent{}, Notes: []string{}}
	for _, part := range []func(*http.Request, uuid.UUID, *labTimeline) error{p.labWebhookEvents, p.labRunEvents, p.labProviderEvents} {
		if err := part(r, id, &tl); err != nil {
			p.problem(w, r, fmt.Errorf("lab: timeline of %s: %w", id, err))
			return
		}
	}
	slices.SortStableFunc(tl.Events, func(a, b labEvent) int { return a.At.Compare(b.At) })
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, tl)
}

// labWebhookEvents adds the order's webhook inbox rows and their delivery
// attempts.
func (p *Page) labWebhookEvents(r *http.Request, id uuid.UUID, tl *labTimeline) error {
	webhooks, err := p.lq.LabOrderWebhooks(r.Context(), id)
	if err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	events := map[string]bool{}
	for _, wh := range webhooks {
		events[wh.EventID] = true
		tl.Events = append(tl.Events, labEvent{At: wh.ReceivedAt, Kind: "webhook",
			Title: "webhook inbox: " + wh.EventType + " accepted", Detail: "event " + wh.EventID})
	}
	tl.Events = append(tl.Events, p.labDeliveries(r, events, &tl.Notes)...)
	return nil
}

// labRunEvents adds every handler run of the order and its poison messages.
func (p *Page) labRunEvents(r *http.Request, id uuid.UUID, tl *labTimeline) error {
	execs, err := p.lq.LabOrderExecutions(r.Context(), id)
	if err != nil {
		return fmt.Errorf("executions: %w", err)
	}
	for _, e := range execs {
		tl.Events = append(tl.Events, labEvent{At: e.CreatedAt, Kind: "execution", Title: e.Handler + " ran",
			Detail: "message " + e.MessageID, MessageID: e.MessageID, Outcomes: e.Outcomes, Error: e.Error.String})
	}
	poisoned, err := p.lq.LabOrderPoison(r.Context(), id.String())
	if err != nil {
		return fmt.Errorf("poison queue: %w", err)
	}
	for _, pm := range poisoned {
		title := "poison queue: " + pm.Topic + " (" + pm.Handler + ")"
		if pm.ReprocessedAt != nil {
			title += ", replayed " + pm.ReprocessedAt.Format(time.TimeOnly)
		}
		tl.Events = append(tl.Events, labEvent{At: pm.CreatedAt, Kind: "poison", Title: title, Detail: pm.Reason, MessageID: pm.MessageID})
	}
	return nil
}

// labProviderEvents adds the service's record of its provider calls: the
// gateway's charges and refunds, the notifications.
func (p *Page) labProviderEvents(r *http.Request, id uuid.UUID, tl *labTimeline) error {
	charges, err := p.lq.LabOrderGatewayCalls(r.Context(), id)
	if err != nil {
		return fmt.Errorf("gateway calls: %w", err)
	}
	for _, c := range charges {
		tl.Events = append(tl.Events, gatewayCall(c.CreatedAt, "charges", c.Status, c.ChargeID, c.Replayed, c.GatewayKey))
	}
	refunds, err := p.lq.LabOrderRefundCalls(r.Context(), id)
	if err != nil {
		return fmt.Errorf("refund calls: %w", err)
	}
	for _, c := range refunds {
		tl.Events = append(tl.Events, gatewayCall(c.CreatedAt, "refunds", c.Status, c.RefundID, c.Replayed, c.GatewayKey))
	}
	sent, err := p.lq.LabOrderNotifications(r.Context(), id)
	if err != nil {
		return fmt.Errorf("notifications: %w", err)
	}
	for _, n := range sent {
		title := "provider POST /notifications (" + n.Template + "): " + n.ProviderNotificationID
		if n.Replayed {
			title += " (replayed answer: nothing sent)"
		}
		tl.Events = append(tl.Events, labEvent{At: n.CreatedAt, Kind: "notification", Title: title,
			Detail: "Idempotency-Key " + n.IdempotencyKey, MessageID: n.MessageID})
	}
	return nil
}

// gatewayCall is one recorded call to the gateway's POST /charges or
// POST /refunds.
func gatewayCall(at time.Time, endpoint string, status int32, gatewayID pgtype.Text, replayed bool, key string) labEvent {
	title := fmt.Sprintf("gateway POST /%s: %d", endpoint, status)
	if gatewayID.Valid {
		title += " " + gatewayID.String
	}
	if replayed {
		title += " (replayed answer: nothing new)"
	}
	return labEvent{At: at, Kind: "gateway", Title: title, Detail: "Idempotency-Key " + key}
}

// labDeliveries are the fake gateway's delivery attempts of the events
// (GET /webhook-deliveries): a redelivery of an event the inbox already
// holds is an attempt here and no row there. A note says when the fakes do
// not answer.
func (p *Page) labDeliveries(r *http.Request, events map[string]bool, notes *[]string) []labEvent {
	if len(events) == 0 {
		return nil
	}
	var attempts []struct {
		EventID    string    `json:"event_id"`
		Attempt    int       `json:"attempt"`
		StatusCode int       `json:"status_code"`
		Error      string    `json:"error"`
		At         time.Time `json:"at"`
	}
	if err := p.fakesJSON(r.Context(), "/webhook-deliveries", &attempts); err != nil {
		*notes = append(*notes, "webhook deliveries not shown: "+p.errFakesUnreachable(err).detail)
		return nil
	}
	var out []labEvent
	for _, a := range attempts {
		if !events[a.EventID] {
			continue
		}
		answer := cmp.Or(a.Error, fmt.Sprint(a.StatusCode))
		out = append(out, labEvent{At: a.At, Kind: "delivery",
			Title:  fmt.Sprintf("gateway delivered the webhook (attempt %d): %s", a.Attempt, answer),
			Detail: "event " + a.EventID})
	}
	return out
}
