package httpapi

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/order"
)

// Audit is GET /orders/{id}/audit: how often each handler ran for the order
// (executions) against what was really applied (effects, keyed by the effect
// names of internal/effect, each the column of AuditOrder that counts it).
// However large the executions, after a correct run every effect is 0 or 1.
//
// Cleaned names the counts whose evidence retention has removed rows of for
// this order (internal/ops/retention): "executions" (every handler's runs),
// "confirmation_enqueued", "confirmation_delivered". Such a count is what is
// left, not what happened: a 0 there does not say the e-mail was not sent.
// Always present, empty when nothing was cleaned.
//
// Reconciled names what orderpaid reconcile settled for the order
// (internal/ops/reconcile): "charge_completed", "charge_released",
// "refund_recorded", "confirmation_resent", each once. Always present.
type Audit struct {
	OrderID    uuid.UUID        `json:"order_id"`
	Executions map[string]int64 `json:"executions"`
	Effects    map[string]int64 `json:"effects"`
	Cleaned    []string         `json:"cleaned"`
	Reconciled []string         `json:"reconciled"`
}

func (s *server) handleOrderAudit(w http.ResponseWriter, r *http.Request) {
	id, err := orderID(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if _, err := order.Get(r.Context(), s.q, id); err != nil {
		s.problem(w, r, err)
		return
	}
	a, err := s.q.AuditOrder(r.Context(), id)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, Audit{
		OrderID: id,
		Executions: map[string]int64{
			"order_paid":       a.ExecutionsOrderPaid,
			"order_confirmed":  a.ExecutionsOrderConfirmed,
			"order_refunded":   a.ExecutionsOrderRefunded,
			"refund_requested": a.ExecutionsRefundRequested,
			"refund_confirmed": a.ExecutionsRefundConfirmed,
		},
		Effects: map[string]int64{
			effect.Paid:                  a.Paid,
			effect.Commission:            a.Commission,
			effect.ConfirmationEnqueued:  a.ConfirmationEnqueued,
			effect.ConfirmationDelivered: a.ConfirmationDelivered,
			effect.NotificationSent:      a.NotificationSent,
			effect.Charges:               a.Charges,
			effect.StockReserved:         a.StockReserved,
			effect.StockReleased:         a.StockReleased,
			effect.CommissionReversed:    a.CommissionReversed,
			effect.Refunded:              a.Refunded,
			effect.RefundNotified:        a.RefundNotified,
			effect.RefundFailed:          a.RefundFailed,
		},
		Cleaned:    append([]string{}, a.Cleaned...), // [] rather than null when nothing was cleaned
		Reconciled: append([]string{}, a.Reconciled...),
	})
}
