package outbox_test

import (
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/outbox"
)

// TestSlotNamesOfTwoDatabasesNeverCollide: a replication slot belongs to
// the server, so two databases must never get the same slot name. The name
// was the database's cut at 63 characters: two databases sharing their
// first 46 (the crash matrix's cells of one boundary, a side each: ..._1_a_x
// and ..._1_b_y) shared one slot, and each relay read, confirmed and dropped
// the other's.
func TestSlotNamesOfTwoDatabasesNeverCollide(t *testing.T) {
	long := "orderpaid_scn_cm_nfirmed_consumerinboxinsert_1"
	pairs := [][2]string{
		{long + "_a_1b2c3d", long + "_b_4e5f6a"},
		{"Shop-A", "shop_a"},
		{"shop", "Shop"},
	}
	for _, p := range pairs {
		a, b := outbox.SlotName(p[0]), outbox.SlotName(p[1])
		if a == b {
			t.Errorf("SlotName(%q) = SlotName(%q) = %q", p[0], p[1], a)
		}
		for _, n := range []string{a, b} {
			if len(n) > 63 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
				t.Errorf("%q is not a valid slot name (at most 63 of [a-z0-9_])", n)
			}
		}
	}
	if got := outbox.SlotName("orderpaid"); got != "orderpaid_outbox_orderpaid" {
		t.Errorf("SlotName(orderpaid) = %q: a name that fits keeps its slot's name", got)
	}
}
