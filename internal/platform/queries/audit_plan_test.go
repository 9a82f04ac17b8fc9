package queries_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// The audit counts an order's delivered confirmations from the order's own
// rows of consumer_inbox, through the index on (order_id, consumer), on a
// table PostgreSQL holds no statistics of (never analyzed: a fresh
// database, or a bulk load autovacuum has not reached). Without that index
// the plan also read the primary key for consumer = 'order_confirmed',
// every confirmation ever delivered, for one order's count.
func TestAuditConfirmationDeliveredWithoutStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := pgtest.NewDatabase(t)
	if _, err := pool.Exec(ctx, "ALTER TABLE consumer_inbox SET (autovacuum_enabled = off)"); err != nil {
		t.Fatal(err)
	}
	// 20,000 rows of other orders, both consumers; the order's own two.
	if _, err := pool.Exec(ctx, `INSERT INTO consumer_inbox (consumer, message_id, order_id)
		SELECT c, gen_random_uuid()::text, gen_random_uuid()
		FROM generate_series(1, 10000), unnest(ARRAY['order_paid', 'order_confirmed']) c`); err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO consumer_inbox (consumer, message_id, order_id)
		VALUES ('order_paid', 'm-paid', $1), ('order_confirmed', 'm-confirmed', $1)`, id); err != nil {
		t.Fatal(err)
	}
	var analyzed bool
	if err := pool.QueryRow(ctx, `SELECT reltuples >= 0 FROM pg_class WHERE oid = 'consumer_inbox'::regclass`).Scan(&analyzed); err != nil || analyzed {
		t.Fatalf("consumer_inbox has statistics (%v): the test needs a table never analyzed", err)
	}

	audit, err := queries.New(pool).AuditOrder(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if audit.ConfirmationDelivered != 1 {
		t.Errorf("confirmation_delivered = %d, want 1", audit.ConfirmationDelivered)
	}

	var plan []byte
	if err := pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+queries.AuditOrderSQL, id).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var root any
	if err := json.Unmarshal(plan, &root); err != nil {
		t.Fatal(err)
	}
	var read []string // how the plan reads consumer_inbox
	walkPlan(root, func(node map[string]any) {
		index, _ := node["Index Name"].(string)
		relation, _ := node["Relation Name"].(string)
		switch {
		case strings.HasPrefix(index, "consumer_inbox"):
			read = append(read, index)
		case relation == "consumer_inbox" && node["Node Type"] == "Seq Scan":
			read = append(read, "Seq Scan")
		}
	})
	if want := []string{"consumer_inbox_order_consumer_idx"}; !slices.Equal(read, want) {
		t.Errorf("the audit reads consumer_inbox through %v, want %v only; plan:\n%s", read, want, plan)
	}
}

// walkPlan calls visit on every node of an EXPLAIN (FORMAT JSON) plan.
func walkPlan(v any, visit func(map[string]any)) {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			walkPlan(e, visit)
		}
	case map[string]any:
		if _, ok := v["Node Type"]; ok {
			visit(v)
		}
		for _, e := range v {
			walkPlan(e, visit)
		}
	}
}
