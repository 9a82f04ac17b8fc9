package postgres

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/orderpaid/orderpaid/sql/migrations"
)

// Migrate applies every pending migration. It is safe to run twice and from
// several processes at once: goose records applied versions in
// goose_db_version and a session advisory lock serialises concurrent runs.
func Migrate(ctx context.Context, pool *pgxpool.Pool, out io.Writer) error {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("create migration lock: %w", err)
	}
	sqlDB := stdlib.OpenDBFromPool(pool)
	defer sqlDB.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	version, err := provider.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	for _, r := range results {
		fmt.Fprintf(out, "applied %s (%s)\n", r.Source.Path, r.Duration.Round(1000))
	}
	fmt.Fprintf(out, "schema at version %d (%d migrations applied now)\n", version, len(results))
	return nil
}
