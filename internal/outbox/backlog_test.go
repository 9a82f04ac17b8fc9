package outbox_test

import (
	"fmt"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// backlogByJoin is the backlog by its definition: every outbox row joined to
// the position of its lane, counted when it is after it (or the lane has
// none). It reads the whole outbox; OutboxBacklog must give the same number
// reading only the rows that wait.
const backlogByJoin = `SELECT count(*)
FROM watermill_outbox o
LEFT JOIN watermill_offsets_outbox r
  ON r.consumer_group = 'outbox_relay.lane' || (abs(hashtext(coalesce(o.payload -> 'metadata' ->> 'order_id', o.uuid))::bigint) % 2) || 'of2'
WHERE r.consumer_group IS NULL
   OR (o.transaction_id, o."offset") > (r.last_processed_transaction_id, r.offset_acked)`

// seedOutbox writes rows outbox rows of random orders in transactions of
// perTx rows, and creates the relay's tables and lane index as the relay
// does when it starts.
func seedOutbox(tb testing.TB, pool *pgxpool.Pool, rows, perTx int) {
	tb.Helper()
	for lane := range outbox.RelayLanes {
		sub, err := broker.NewPostgresSubscriber(pool, broker.PostgresSubscriberConfig{
			ConsumerGroup: outbox.RelayGroup, Lane: lane, Lanes: outbox.RelayLanes, LaneKey: broker.LaneKeyEnvelope,
		}, watermill.NopLogger{})
		if err != nil {
			tb.Fatal(err)
		}
		defer sub.Close()
		if err := sub.(message.SubscribeInitializer).SubscribeInitialize(outbox.Topic); err != nil {
			tb.Fatal(err)
		}
	}
	for done := 0; done < rows; done += perTx {
		if _, err := pool.Exec(tb.Context(), `INSERT INTO watermill_outbox (uuid, payload, metadata, transaction_id)
			SELECT gen_random_uuid()::text,
			       json_build_object('uuid', gen_random_uuid()::text, 'metadata', json_build_object('order_id', gen_random_uuid()::text)),
			       '{}'::json, pg_current_xact_id()
			FROM generate_series(1, $1)`, min(perTx, rows-done)); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := pool.Exec(tb.Context(), `ANALYZE watermill_outbox`); err != nil {
		tb.Fatal(err)
	}
}

// setPositions puts each relay lane at the row of its lane that is at
// fraction of the outbox, in (transaction id, offset) order, as the relay
// would after reading that far: fraction 0 is the start (a position at (0,
// 0), the relay's first), 1 the end.
func setPositions(tb testing.TB, pool *pgxpool.Pool, fraction float64) {
	tb.Helper()
	for k := range outbox.RelayLanes {
		_, err := pool.Exec(tb.Context(), `
			INSERT INTO watermill_offsets_outbox (consumer_group, offset_acked, last_processed_transaction_id)
			SELECT $1, coalesce(max("offset"), 0), coalesce(max(transaction_id), '0'::xid8) FROM (
			  SELECT "offset", transaction_id FROM watermill_outbox
			  WHERE `+broker.LaneOf(broker.LaneKeyEnvelope, outbox.RelayLanes)+` = $2
			  ORDER BY transaction_id, "offset"
			  LIMIT (SELECT floor(count(*) * $3::float8) FROM watermill_outbox
			         WHERE `+broker.LaneOf(broker.LaneKeyEnvelope, outbox.RelayLanes)+` = $2)::bigint
			) read
			ON CONFLICT (consumer_group) DO UPDATE
			SET offset_acked = excluded.offset_acked, last_processed_transaction_id = excluded.last_processed_transaction_id`,
			fmt.Sprintf("%s.lane%dof%d", outbox.RelayGroup, k, outbox.RelayLanes), k, fraction)
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// OutboxBacklog (the gauge, one index range per lane) counts what its
// definition counts (every row after its lane's position), with no
// position yet, part-way and at the end, over rows written in several
// transactions (so (transaction id, offset) order matters).
func TestOutboxBacklogCountsWhatTheRelayHasNotRead(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	seedOutbox(t, pool, 1000, 70)
	check := func(state string) {
		t.Helper()
		got, err := queries.New(pool).OutboxBacklog(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var want int64
		if err := pool.QueryRow(t.Context(), backlogByJoin).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: OutboxBacklog = %d, want %d (every row after its lane's position)", state, got, want)
		}
	}
	check("no position")
	for _, f := range []float64{0, 0.37, 0.5, 0.99, 1} {
		setPositions(t, pool, f)
		check(fmt.Sprintf("positions at %.0f%%", f*100))
	}
}

// The backlog gauge, on an outbox whose rows are all relayed: by the join of
// every row to its lane's position (the query it replaced), and by one range
// of the lane index per lane. The first reads every row the outbox keeps,
// on every scrape; the second only the rows that wait:
//
//	go test -run '^$' -bench OutboxBacklog ./internal/outbox
func BenchmarkOutboxBacklog(b *testing.B) {
	for _, rows := range []int{1_000, 100_000} {
		pool, _ := pgtest.NewDatabase(b)
		seedOutbox(b, pool, rows, 10_000)
		setPositions(b, pool, 1)
		b.Run(fmt.Sprintf("relayed=%d/join", rows), func(b *testing.B) {
			for b.Loop() {
				var n int64
				if err := pool.QueryRow(b.Context(), backlogByJoin).Scan(&n); err != nil || n != 0 {
					b.Fatalf("backlog %d (err %v), want 0", n, err)
				}
			}
		})
		b.Run(fmt.Sprintf("relayed=%d/lanes", rows), func(b *testing.B) {
			for b.Loop() {
				if n, err := queries.New(pool).OutboxBacklog(b.Context()); err != nil || n != 0 {
					b.Fatalf("backlog %d (err %v), want 0", n, err)
				}
			}
		})
	}
}
