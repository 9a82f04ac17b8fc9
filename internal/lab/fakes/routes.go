package fakes

import "net/http"

// New returns one handler serving the fake gateway g and the fake
// notification provider n; it is what `orderpaid-lab fakes` serves on
// FAKES_ADDR. Every route is listed here.
//
// Gateway:
//
//	POST /charges                  charge once per Idempotency-Key (201; replay: stored answer + Idempotent-Replayed: true)
//	GET  /charges                  the charges actually made; ?order_id=X those of one order (lookup.go)
//	POST /charges/{id}/redeliver   {"count":N,"concurrent":bool,"new_event_id":bool} -> 202 {"event_ids":[...]}
//	POST /refunds                  {"charge_id":"ch_...","amount_cents":N} refund once per Idempotency-Key (201; replay as above;
//	                               404 unknown charge; 409 that money is already refunded under another key)
//	GET  /refunds                  the refunds actually made; ?order_id=X those of one order
//	GET  /refund-refusals          the refunds refused for good (refuse_refunds_of): asked, and nothing refunded
//	POST /refunds/{id}/redeliver   the refund's payment.refunded again, as for a charge
//	GET  /webhook-deliveries       every webhook delivery attempt
//	POST /control/gateway          {"fail_next":N,"fail_status":S,"retry_after_s":N,"delay_ms":N,"duplicate_webhooks":N,"hold_webhooks":bool} replaces the settings
//	                               (of POST /charges and POST /refunds alike); and {"refuse_refunds_of":"<order id>","refuse_status":S}:
//	                               every refund of that order's charge is refused for good with S (400 to 499, default 402);
//	                               and {"lookup_fail_next":N}: the next N look-ups by order_id answer 503
//	GET  /control/gateway          the current settings
//	POST /control/gateway/forget-keys  forget every Idempotency-Key, as a gateway does when its keys expire
//	                               (charges and refunds stay made) -> 200 {"forgotten":N}
//
// Notification provider:
//
//	POST /notifications            send once per Idempotency-Key (201; replay as above)
//	GET  /notifications            the notifications actually sent; ?order_id=X those about one order
//	POST /control/notifications    {"fail_next":N,"fail_status":S,"retry_after_s":N,"delay_ms":N,"lookup_fail_next":N} replaces the settings
//	POST /control/notifications/forget-keys  forget every Idempotency-Key (the e-mails stay sent) -> 200 {"forgotten":N}
//	GET  /control/notifications    the current settings
//
// Both:
//
//	POST /control/search-lag       {"seconds":N}: look-ups by order_id leave out what was made in the
//	                               last N seconds, a search index not caught up yet (0 to 86400)
//
// fail_next requests fail with fail_status (400 to 599, default 503) and,
// when retry_after_s is above 0, a Retry-After header; see control.go.
//
// And GET /healthz answers 200 "ok". Errors of these routes are
// application/problem+json (unknown routes get the ServeMux's plain 404/405).
func New(g *Gateway, n *Notifier) http.Handler {
	mux := http.NewServeMux()

	mux.HandleFunc("POST /charges", g.handleCreateCharge)
	mux.HandleFunc("GET /charges", g.handleListCharges)
	mux.HandleFunc("POST /charges/{id}/redeliver", g.handleRedeliver)
	mux.HandleFunc("POST /refunds/{id}/redeliver", g.handleRedeliver)
	mux.HandleFunc("POST /refunds", g.handleCreateRefund)
	mux.HandleFunc("GET /refunds", g.handleListRefunds)
	mux.HandleFunc("GET /refund-refusals", g.handleListRefusals)
	mux.HandleFunc("GET /webhook-deliveries", g.handleListDeliveries)
	mux.HandleFunc("POST /control/gateway", g.handleSetGatewayControl)
	mux.HandleFunc("GET /control/gateway", g.handleGetGatewayControl)
	mux.HandleFunc("POST /control/gateway/forget-keys", g.handleForgetKeys)

	mux.HandleFunc("POST /notifications", n.handleSend)
	mux.HandleFunc("GET /notifications", n.handleList)
	mux.HandleFunc("POST /control/notifications", n.handleSetNotifierControl)
	mux.HandleFunc("GET /control/notifications", n.handleGetNotifierControl)
	mux.HandleFunc("POST /control/notifications/forget-keys", n.handleForgetKeys)

	mux.HandleFunc("POST /control/search-lag", handleSearchLag(g, n))

	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeBody(w, http.StatusOK, "text/plain; charset=utf-8", []byte("ok"))
	})
	return mux
}
