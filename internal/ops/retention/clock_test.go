package retention_test

import (
	"net/url"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/ops/retention"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
)

// TestCutoffsOnTheDatabasesClock: the cleaner measures a row's age on the
// clock that stamped it, the database's, so a host whose clock is days ahead
// removes nothing written minutes ago.
//
// The skew is made on the database's side, since a Go binary reads its own
// clock without a seam a test could move: a function now() in a schema
// searched before pg_catalog answers 8 days behind the real time, for the
// rows written here and for every query of the cleaner. The process is then
// 8 days ahead of its database. A cutoff taken from the process's clock
// (time.Now() minus the 7-day window) falls a day after the rows written
// "just now", and removes them.
func TestCutoffsOnTheDatabasesClock(t *testing.T) {
	t.Parallel()
	admin, dsn := pgtest.NewDatabase(t)
	exec(t, admin, `
		CREATE SCHEMA db_clock;
		CREATE FUNCTION db_clock.now() RETURNS timestamptz LANGUAGE sql STABLE
			AS $$ SELECT pg_catalog.now() - interval '8 days' $$;`)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", "db_clock,pg_catalog,public")
	u.RawQuery = q.Encode()
	pool, err := postgres.Connect(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if got := strings(t, pool, `SELECT (pg_catalog.now() - now() > interval '7 days')::text`); got != "true" {
		t.Fatalf("the database's clock is not behind: %s", got)
	}

	exec(t, pool, `
		INSERT INTO webhook_inbox (event_id, event_type, received_at) VALUES
			('evt_just_now', 'payment.succeeded', now()),
			('evt_old', 'payment.succeeded', now() - interval '8 days');
		INSERT INTO consumer_inbox (consumer, message_id, processed_at) VALUES
			('order_confirmed', 'just-now', now()),
			('order_confirmed', 'old', now() - interval '8 days');`)
	c, err := retention.NewCleaner(pool, retention.Config{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.RunOnce(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := (retention.Result{WebhookInbox: 1, ConsumerInbox: 1}); got != want {
		t.Errorf("removed %+v, want %+v: only the rows 8 days old on the database's clock", got, want)
	}
	if left := strings(t, pool, `SELECT event_id FROM webhook_inbox UNION ALL SELECT message_id FROM consumer_inbox ORDER BY 1`); left != "evt_just_now,just-now" {
		t.Errorf("rows left: %q, want the two written just now", left)
	}
}
