package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// RequireLogicalWAL skips the test where the test server's wal_level is not
// logical (which the relay from the WAL, OUTBOX_RELAY=logical, needs), naming
// the command that sets it; in CI, where it must run, it fails.
func RequireLogicalWAL(t testing.TB) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), AdminURL())
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		t.Skipf("PostgreSQL not reachable at %s: %v", AdminURL(), err)
	}
	defer conn.Close(context.Background())
	var level string
	if err := conn.QueryRow(t.Context(), "SHOW wal_level").Scan(&level); err != nil {
		t.Fatal(err)
	}
	switch {
	case level == "logical":
	case os.Getenv("CI") != "":
		t.Fatalf("wal_level is %s, and CI runs the logical relay: scripts/services.sh sets wal_level = logical", level)
	default:
		t.Skipf("wal_level is %s: run scripts/services.sh (it sets wal_level = logical on the local cluster, once, with a restart)", level)
	}
}
