package fakes

import (
	"net/http"
	"slices"
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

// handleListCharges serves GET /charges and GET /charges?order_id=X.
func (g *Gateway) handleListCharges(w http.ResponseWriter, r *http.Request) {
	serveLookup(w, r, g.admitLookup, g.Charges, func(c Charge) string { return c.OrderID })
}

// handleListRefunds serves GET /refunds and GET /refunds?order_id=X.
func (g *Gateway) handleListRefunds(w http.ResponseWriter, r *http.Request) {
	serveLookup(w, r, g.admitLookup, g.Refunds, func(rf Refund) string { return rf.OrderID })
}

// handleList serves GET /notifications and GET /notifications?order_id=X.
func (n *Notifier) handleList(w http.ResponseWriter, r *http.Request) {
	serveLookup(w, r, n.admitLookup, n.Notifications, func(nt Notification) string { return nt.OrderID })
}

// serveLookup answers a list of records, or, with ?order_id=X, those of
// order X: after admit, which may fail it.
func serveLookup[T any](w http.ResponseWriter, r *http.Request, admit func() error, list func() []T, orderOf func(T) string) {
	orderID := r.URL.Query().Get("order_id")
	if orderID == "" {
		writeJSON(w, http.StatusOK, list())
		return
	}
	if err := admit(); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, slices.DeleteFunc(list(), func(t T) bool { return orderOf(t) != orderID }))
}

// admitLookup uses up one of the gateway's lookup_fail_next.
func (g *Gateway) admitLookup() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return takeFailure(&g.control.LookupFailNext, 0, 0)
}

// admitLookup uses up one of the notifier's lookup_fail_next.
func (n *Notifier) admitLookup() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return takeFailure(&n.control.LookupFailNext, 0, 0)
}
