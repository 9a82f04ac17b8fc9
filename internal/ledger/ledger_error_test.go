package ledger_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/orderpaid/orderpaid/internal/effect"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/ledger"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
)

// already_applied means one thing: the conflict on the business key, the
// commission is credited. Any other failure of the insert is an error the
// caller must see and retry, never "already applied": taking every error for
// a duplicate (a plain INSERT whose unique violation is caught along with
// everything else) reports a commission that was never credited. Here the
// insert fails on the foreign key, because the order does not exist.
func TestReleaseCommissionSurfacesAnErrorThatIsNotTheConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := pgtest.NewDatabase(t)
	q := queries.New(pool)

	missing := queries.Order{ID: uuid.New(), AffiliateID: pgtype.Text{String: "a1", Valid: true}, AmountCents: 10000}
	outcome, err := ledger.ReleaseCommission(ctx, q, missing, "msg-1")
	if err == nil {
		t.Fatalf("commission of an order that does not exist = %q, nil; want the foreign key error", outcome)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM ledger_entries").Scan(&n); err != nil || n != 0 {
		t.Fatalf("ledger rows = %d (err %v), want 0", n, err)
	}

	t.Run("the conflict on the key is already_applied, not an error", func(t *testing.T) {
		o, err := order.Create(ctx, q, order.NewOrder{CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL"})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []effect.Outcome{effect.Applied, effect.AlreadyApplied} {
			if got, err := ledger.ReleaseCommission(ctx, q, o, "msg-1"); err != nil || got != want {
				t.Fatalf("release %d = %q, %v; want %q, nil", i+1, got, err, want)
			}
		}
	})
}
