package bench_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// The two reads anyone can trigger, at growing table sizes: the audit
// (GET /orders/{id}/audit, unauthenticated) and the claim of a new payment
// key (phase 1 of POST /orders/{id}/payments). Each size gets its own
// database seeded with that many paid orders, each with one row in every
// table the audit and the claim read (outbox, execution log, inboxes,
// transitions, ledger, notification log, idempotency keys, charges and
// gateway calls). Both must stay flat: at 1,000,000 rows at most twice the
// time at 10,000 (docs/performance.md has the numbers):
//
//	go test -run '^$' -bench AuditAndKeyClaimAtScale -benchtime 2000x ./internal/lab/bench
//
// "audit" serves the endpoint in-process (the real handler and query, no
// network). "claim" is payment.Service.Pay of a new key on a pending order
// with the fault point before the gateway call armed: the claim transaction
// (the order, the key, the order's charge) commits, and Pay stops where it
// would call the gateway, so the number is the claim alone.
func BenchmarkAuditAndKeyClaimAtScale(b *testing.B) {
	for _, rows := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			pool, _ := pgtest.NewDatabase(b)
			seedScale(b, pool, rows)
			b.Run("audit", func(b *testing.B) { benchAudit(b, pool, rows) })
			b.Run("claim", func(b *testing.B) { benchClaim(b, pool) })
		})
	}
}

// seedOrderID is the id of seeded order i, the same expression in every
// INSERT so each table's row i belongs to order i.
const seedOrderID = `md5('order' || i)::uuid`

// seedScale writes rows paid orders and their rows, in chunks of 100,000
// with a line of progress each (a million takes minutes), then VACUUM
// ANALYZE so the planner and the visibility map see the real tables.
func seedScale(b *testing.B, pool *pgxpool.Pool, rows int) {
	b.Helper()
	o := seedOrderID
	tables := []struct{ name, sql string }{
		{"orders", `INSERT INTO orders (id, customer_id, affiliate_id, amount_cents, currency, status, paid_at)
			SELECT ` + o + `, 'c' || i, 'a1', 10000, 'BRL', 'paid', now() FROM generate_series($1::int, $2::int) AS i`},
		{"order_transitions", `INSERT INTO order_transitions (order_id, from_status, to_status, message_id)
			SELECT ` + o + `, 'pending', 'paid', 'p' || i FROM generate_series($1::int, $2::int) AS i`},
		{"ledger_entries", `INSERT INTO ledger_entries (entry_key, order_id, entry_type, affiliate_id, amount_cents, message_id)
			SELECT ` + o + `::text || ':affiliate_commission', ` + o + `, 'affiliate_commission', 'a1', 1000, 'p' || i FROM generate_series($1::int, $2::int) AS i`},
		{"watermill_outbox", `INSERT INTO watermill_outbox (uuid, payload, metadata, transaction_id)
			SELECT gen_random_uuid()::text,
			       json_build_object('destination_topic', 'order_confirmed', 'uuid', 'm' || i, 'payload', '',
			                         'metadata', json_build_object('order_id', ` + o + `::text)),
			       '{}'::json, pg_current_xact_id()
			FROM generate_series($1::int, $2::int) AS i`},
		{"executions", `INSERT INTO executions (handler, message_id, order_id)
			SELECT 'order_confirmed', 'm' || i, ` + o + ` FROM generate_series($1::int, $2::int) AS i`},
		{"consumer_inbox", `INSERT INTO consumer_inbox (consumer, message_id, order_id)
			SELECT 'order_confirmed', 'm' || i, ` + o + ` FROM generate_series($1::int, $2::int) AS i`},
		{"notification_log", `INSERT INTO notification_log (order_id, message_id, idempotency_key, provider_notification_id, replayed)
			SELECT ` + o + `, 'm' || i, 'm' || i, 'n' || i, false FROM generate_series($1::int, $2::int) AS i`},
		{"idempotency_keys", `INSERT INTO idempotency_keys (scope, key, fingerprint, order_id, response_status, response_body, completed_at)
			SELECT 'c' || i, 'k' || i, 'f', ` + o + `, 201, '{}', now() FROM generate_series($1::int, $2::int) AS i`},
		{"order_charges", `INSERT INTO order_charges (order_id, state, holder_scope, holder_key)
			SELECT ` + o + `, 'charged', 'c' || i, 'k' || i FROM generate_series($1::int, $2::int) AS i`},
		{"gateway_charge_calls", `INSERT INTO gateway_charge_calls (order_id, gateway_key, status, charge_id, replayed)
			SELECT ` + o + `, 'g' || i, 201, 'ch' || i, false FROM generate_series($1::int, $2::int) AS i`},
	}
	const chunk = 100_000
	start := time.Now()
	for _, t := range tables {
		for lo := 1; lo <= rows; lo += chunk {
			hi := min(lo+chunk-1, rows)
			if _, err := pool.Exec(b.Context(), t.sql, lo, hi); err != nil {
				b.Fatalf("seed %s: %v", t.name, err)
			}
			fmt.Fprintf(os.Stderr, "seed %d rows: %s %d/%d (%s)\n", rows, t.name, hi, rows, time.Since(start).Round(time.Second))
		}
	}
	for _, t := range tables {
		if _, err := pool.Exec(b.Context(), "VACUUM ANALYZE "+t.name); err != nil {
			b.Fatal(err)
		}
	}
	fmt.Fprintf(os.Stderr, "seed %d rows: done in %s\n", rows, time.Since(start).Round(time.Second))
}

// benchAudit asks for the audit of seeded orders, spread over the table.
func benchAudit(b *testing.B, pool *pgxpool.Pool, rows int) {
	api := httpapi.NewServer(httpapi.Deps{Pool: pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ids, err := pgx.CollectRows(mustQuery(b, pool, `SELECT `+seedOrderID+` FROM generate_series(1, $1::int, greatest($1::int / 1000, 1)) AS i`, rows),
		pgx.RowTo[uuid.UUID])
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/orders/"+ids[i%len(ids)].String()+"/audit", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("audit: %d %s", rec.Code, rec.Body)
		}
		i++
	}
}

// benchClaim claims a new key on a new pending order per iteration. Pending
// orders are made 1,000 at a time with the timer stopped.
func benchClaim(b *testing.B, pool *pgxpool.Pool) {
	faults := fault.New(nil)
	faults.Arm(payment.FaultBeforeGatewayCall, fault.Fail, -1)
	svc := payment.NewService(pool, payment.NewGatewayClient("http://127.0.0.1:9", nil), payment.Config{}).WithFaults(faults)
	var pending []uuid.UUID
	for b.Loop() {
		if len(pending) == 0 {
			b.StopTimer()
			rows, err := pgx.CollectRows(mustQuery(b, pool, `INSERT INTO orders (id, customer_id, amount_cents, currency)
				SELECT gen_random_uuid(), 'bench', 10000, 'BRL' FROM generate_series(1, 1000) RETURNING id`), pgx.RowTo[uuid.UUID])
			if err != nil {
				b.Fatal(err)
			}
			pending = rows
			b.StartTimer()
		}
		id := pending[0]
		pending = pending[1:]
		_, err := svc.Pay(b.Context(), payment.Request{OrderID: id, Key: "bench-" + id.String()})
		if !errors.Is(err, fault.ErrInjected) {
			b.Fatalf("Pay stopped with %v, want the fault before the gateway call (the claim committed)", err)
		}
	}
}

func mustQuery(b *testing.B, pool *pgxpool.Pool, sql string, args ...any) pgx.Rows {
	rows, err := pool.Query(b.Context(), sql, args...)
	if err != nil {
		b.Fatal(err)
	}
	return rows
}
