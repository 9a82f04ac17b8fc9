package httpapi_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// Each effect the audit reports has one name, a constant of internal/effect,
// and that name is three things at once: the key CONTRACT.md promises under
// "effects" (written out here, as the contract is), the alias of the column
// of AuditOrder (sql/queries/audit.sql) that counts it, and the key GET
// /orders/{id}/audit answers with. SQL cannot import the constants: this
// test fails when a column of the audit is added, renamed or dropped without
// its constant, or a constant without its column.
func TestAuditEffectsAreTheColumnsOfTheAuditQuery(t *testing.T) {
	t.Parallel()
	names := []struct{ constant, contract string }{
		{effect.Paid, "paid"},
		{effect.Commission, "commission"},
		{effect.ConfirmationEnqueued, "confirmation_enqueued"},
		{effect.ConfirmationDelivered, "confirmation_delivered"},
		{effect.NotificationSent, "notification_sent"},
		{effect.Charges, "charges"},
		{effect.StockReserved, "stock_reserved"},
		{effect.StockReleased, "stock_released"},
		{effect.CommissionReversed, "commission_reversed"},
		{effect.Refunded, "refunded"},
		// Beyond the contract's list: the customer's notice of a refund,
		// counted apart from the confirmation so that each stays 0 or 1.
		{effect.RefundNotified, "refund_notified"},
		// And a refund the provider refused for good: the order moved to
		// refund_failed, its money still with the merchant.
		{effect.RefundFailed, "refund_failed"},
	}
	var constants []string
	for _, n := range names {
		if n.constant != n.contract {
			t.Errorf("effect constant %q, the contract names it %q", n.constant, n.contract)
		}
		constants = append(constants, n.constant)
	}
	slices.Sort(constants)

	// AuditOrderRow's json names are the query's column aliases (sqlc writes
	// them, and scripts/test.sh proves the code is current). Every column is
	// an effect but the executions, the names of cleaned evidence and what
	// reconcile settled.
	var columns []string
	row := reflect.TypeFor[queries.AuditOrderRow]()
	for i := range row.NumField() {
		name := row.Field(i).Tag.Get("json")
		if !strings.HasPrefix(name, "executions_") && name != "cleaned" && name != "reconciled" {
			columns = append(columns, name)
		}
	}
	slices.Sort(columns)
	if !slices.Equal(columns, constants) {
		t.Errorf("AuditOrder's effect columns are %q, internal/effect names %q", columns, constants)
	}

	b := setup(t)
	var keys []string
	for k := range b.audit(t, b.newOrder(t).ID).Effects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, constants) {
		t.Errorf("GET /orders/{id}/audit answers effects %q, want %q", keys, constants)
	}
}
