package fakes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Deliveries returns a snapshot of every webhook delivery attempt, in the
// order they were made.
func (g *Gateway) Deliveries() []DeliveryAttempt {
	d := g.delivery
	d.mu.Lock()
	defer d.mu.Unlock()
	return append(make([]DeliveryAttempt, 0, len(d.attempts)), d.attempts...)
}

// WaitDelivered returns when no webhook delivery is pending: each has been
// answered with a 2xx or has run out of attempts. It returns ctx's error if
// ctx ends first. Tests call it before asserting on what the receiver got.
func (g *Gateway) WaitDelivered(ctx context.Context) error {
	return g.delivery.wait(ctx)
}

// Close stops pending webhook deliveries (no further attempts are made) and
// waits for their goroutines to return. Charges made later send no webhook.
// Close may be called more than once.
func (g *Gateway) Close() {
	g.delivery.close()
}

// redeliverRequest is the body of POST /charges/{id}/redeliver.
type redeliverRequest struct {
	Count      int  `json:"count"`        // deliveries to make; 0 means 1
	Concurrent bool `json:"concurrent"`   // release them all at the same moment
	NewEventID bool `json:"new_event_id"` // a fresh event id for each
}

// Redeliver delivers the webhook of an existing charge (payment.succeeded)
// or refund (payment.refunded), named by its id, count more times and
// returns the event ids used. Without newEventID they repeat the charge's
// original event id, as a provider retrying a delivery does; with it each gets
// a fresh id, as a provider that emits two events for one payment does. With
// concurrent, the deliveries are released at the same moment. It returns an
// error wrapping errNotFound for an unknown charge.
func (g *Gateway) Redeliver(chargeID string, count int, concurrent, newEventID bool) ([]string, error) {
	if count < 1 || count > maxRedeliveries {
		return nil, badRequest("count must be between 1 and %d, got %d", maxRedeliveries, count)
	}
	g.mu.Lock()
	ev, ok := g.events[chargeID]
	g.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no charge or refund %q: %w", chargeID, errNotFound)
	}
	events := make([]Event, count)
	ids := make([]string, count)
	for i := range events {
		events[i] = ev
		if newEventID {
			events[i].ID = newID("evt_")
		}
		ids[i] = events[i].ID
	}
	g.delivery.start(events, concurrent)
	return ids, nil
}

// handleRedeliver serves POST /charges/{id}/redeliver. The body is optional.
func (g *Gateway) handleRedeliver(w http.ResponseWriter, r *http.Request) {
	var req redeliverRequest
	if err := decodeStrict(w, r, &req); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, err)
		return
	}
	if req.Count < 0 {
		writeError(w, badRequest("count must not be negative, got %d", req.Count))
		return
	}
	ids, err := g.Redeliver(r.PathValue("id"), cmp.Or(req.Count, 1), req.Concurrent, req.NewEventID)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string][]string{"event_ids": ids})
}

// handleListDeliveries serves GET /webhook-deliveries.
func (g *Gateway) handleListDeliveries(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, g.Deliveries())
}
