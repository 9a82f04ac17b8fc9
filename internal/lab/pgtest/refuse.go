package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// When says when a refused insert fails.
type When string

// When a refused insert fails.
const (
	// AtInsert fails the INSERT statement itself (a write that cannot be made).
	AtInsert When = "insert"
	// AtCommit lets the INSERT succeed and fails the COMMIT of its
	// transaction (a deferred constraint trigger): everything the transaction
	// did is rolled back at the last moment.
	AtCommit When = "commit"
)

// Refusal makes inserts into one table of a test database fail until Lift is
// called: a real PostgreSQL error, raised by a trigger, in place of a mock.
// It stands for the outage of what the table stands for (the outbox, a
// broker's topic table) or for a transaction that cannot commit.
type Refusal struct {
	pool  *pgxpool.Pool
	table string
}

// RefuseInserts installs the refusal on table, active at once. The trigger
// counts each refusal in a sequence, which a rollback does not undo.
func RefuseInserts(t testing.TB, pool *pgxpool.Pool, table string, when When) *Refusal {
	t.Helper()
	ident := pgx.Identifier{table}.Sanitize()
	seq := pgx.Identifier{"pgtest_refused_" + table}.Sanitize()
	trigger := pgx.Identifier{"pgtest_refuse_" + table}.Sanitize()
	timing := "BEFORE INSERT ON " + ident + " FOR EACH ROW"
	create := "CREATE TRIGGER "
	if when == AtCommit {
		create = "CREATE CONSTRAINT TRIGGER "
		timing = "AFTER INSERT ON " + ident + " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW"
	}
	sql := `
		CREATE TABLE IF NOT EXISTS pgtest_refusal (table_name text PRIMARY KEY, active boolean NOT NULL);
		CREATE OR REPLACE FUNCTION pgtest_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF EXISTS (SELECT 1 FROM pgtest_refusal WHERE table_name = TG_TABLE_NAME AND active) THEN
				PERFORM nextval(format('%I', 'pgtest_refused_' || TG_TABLE_NAME));
				RAISE EXCEPTION 'pgtest: inserts into % are refused', TG_TABLE_NAME;
			END IF;
			RETURN NEW;
		END $$;
		CREATE SEQUENCE IF NOT EXISTS ` + seq + `;
		DROP TRIGGER IF EXISTS ` + trigger + ` ON ` + ident + `;
		` + create + trigger + " " + timing + ` EXECUTE FUNCTION pgtest_refuse();`
	ctx := context.Background()
	if _, err := pool.Exec(ctx, sql); err != nil {
		t.Fatalf("refuse inserts into %s: %v", table, err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO pgtest_refusal VALUES ($1, true)
		ON CONFLICT (table_name) DO UPDATE SET active = true`, table); err != nil {
		t.Fatalf("refuse inserts into %s: %v", table, err)
	}
	return &Refusal{pool: pool, table: table}
}

// Lift stops the refusal: inserts from now on succeed.
func (r *Refusal) Lift(t testing.TB) {
	t.Helper()
	if _, err := r.pool.Exec(context.Background(), "UPDATE pgtest_refusal SET active = false WHERE table_name = $1", r.table); err != nil {
		t.Fatalf("lift the refusal on %s: %v", r.table, err)
	}
}

// Count is how many inserts have been refused so far.
func (r *Refusal) Count(t testing.TB) int64 {
	t.Helper()
	var n int64
	err := r.pool.QueryRow(context.Background(),
		"SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM "+pgx.Identifier{"pgtest_refused_" + r.table}.Sanitize()).Scan(&n)
	if err != nil {
		t.Fatalf("count refused inserts into %s: %v", r.table, err)
	}
	return n
}
