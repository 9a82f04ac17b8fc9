package fakes

import (
	"net/http"
	"slices"
	"time"
)

// The look-ups: a real gateway lets the merchant search its charges and
// refunds by the metadata it sent with them (the order id), and an e-mail
// provider its messages by recipient or tag. The service asks them before
// it sends again a call whose outcome it does not know (a timeout, a crash
// after the call): the provider's memory of an Idempotency-Key expires
// (about a day), its record of what it did does not.
//
//	GET /charges?order_id=X        the charges made for the order
//	GET /refunds?order_id=X        the refunds made of the order's charges
//	GET /notifications?order_id=X  the notifications sent about the order
//
// Without order_id each is the whole list, which the tests and reconcile
// read as the ground truth; only a look-up by order takes lookup_fail_next
// (POST /control/gateway, POST /control/notifications): the next N look-ups
// fail with 503, a search that is down while its provider still takes calls.
// And POST /control/search-lag {"seconds":N} sets both fakes' search lag: a
// look-up by order leaves out what was made in the last N seconds, as a
// real provider's search index that has not caught up yet (its idempotency
// keys have: a call re-sent under its key is still answered from them).

// handleListCharges serves GET /charges and GET /charges?order_id=X.
func (g *Gateway) handleListCharges(w http.ResponseWriter, r *http.Request) {
	serveLookup(w, r, g.admitLookup, g.Charges, func(c Charge) (string, time.Time) { return c.OrderID, c.CreatedAt })
}

// handleListRefunds serves GET /refunds and GET /refunds?order_id=X.
func (g *Gateway) handleListRefunds(w http.ResponseWriter, r *http.Request) {
	serveLookup(w, r, g.admitLookup, g.Refunds, func(rf Refund) (string, time.Time) { return rf.OrderID, rf.CreatedAt })
}

// handleList serves GET /notifications and GET /notifications?order_id=X.
func (n *Notifier) handleList(w http.ResponseWriter, r *http.Request) {
	serveLookup(w, r, n.admitLookup, n.Notifications, func(nt Notification) (string, time.Time) { return nt.OrderID, nt.SentAt })
}

// serveLookup answers a list of records, or, with ?order_id=X, those of
// order X that the search has caught up with: after admit, which may fail
// it and says how far behind the search is. of tells a record's order and
// when it was made.
func serveLookup[T any](w http.ResponseWriter, r *http.Request, admit func() (time.Duration, error), list func() []T, of func(T) (string, time.Time)) {
	orderID := r.URL.Query().Get("order_id")
	if orderID == "" {
		writeJSON(w, http.StatusOK, list())
		return
	}
	lag, err := admit()
	if err != nil {
		writeError(w, err)
		return
	}
	indexed := time.Now().Add(-lag)
	writeJSON(w, http.StatusOK, slices.DeleteFunc(list(), func(t T) bool {
		order, made := of(t)
		return order != orderID || made.After(indexed)
	}))
}

// admitLookup uses up one of the gateway's lookup_fail_next, and returns
// its search lag.
func (g *Gateway) admitLookup() (time.Duration, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.searchLag, takeFailure(&g.control.LookupFailNext, 0, 0)
}

// admitLookup uses up one of the notifier's lookup_fail_next, and returns
// its search lag.
func (n *Notifier) admitLookup() (time.Duration, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.searchLag, takeFailure(&n.control.LookupFailNext, 0, 0)
}

// maxSearchLag bounds the search lag: a day is longer than any scenario.
const maxSearchLag = 24 * time.Hour

// handleSearchLag serves POST /control/search-lag {"seconds":N}: both fakes'
// look-ups by order leave out what was made in the last N seconds (0: none).
func handleSearchLag(g *Gateway, n *Notifier) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Seconds int `json:"seconds"`
		}
		if err := decodeStrict(w, r, &body); err != nil {
			writeError(w, err)
			return
		}
		lag := time.Duration(body.Seconds) * time.Second
		if lag < 0 || lag > maxSearchLag {
			writeError(w, badRequest("seconds must be 0 to %d, got %d", int(maxSearchLag.Seconds()), body.Seconds))
			return
		}
		g.mu.Lock()
		g.searchLag = lag
		g.mu.Unlock()
		n.mu.Lock()
		n.searchLag = lag
		n.mu.Unlock()
		writeJSON(w, http.StatusOK, body)
	}
}
