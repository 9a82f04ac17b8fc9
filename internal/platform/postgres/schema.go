package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/orderpaid/orderpaid/sql/migrations"
)

// RequireSchema returns an error unless the database's schema is at the
// version this binary was built with: the highest migration in
// sql/migrations, against the highest version goose recorded in
// goose_db_version. The api and the worker call it before anything else
// touches the database.
//
// Failure it prevents: a process that starts on a database nobody migrated,
// says it is running and ready (/readyz pings the database, which answers),
// answers 500 to every request, and, as a worker, creates the broker's
// tables in whatever database it was given. And its mirror: an older binary
// on a schema a newer one migrated, whose queries may no longer match the
// tables. Both refuse to start instead, naming both versions and what to do.
//
// It only reads: goose's Provider would create goose_db_version on an
// empty database to answer, so this asks goose's store directly.
func RequireSchema(ctx context.Context, pool *pgxpool.Pool) error {
	sqlDB := stdlib.OpenDBFromPool(pool)
	defer sqlDB.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS)
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	sources := provider.ListSources()
	want := sources[len(sources)-1].Version

	found, err := schemaVersion(ctx, sqlDB)
	if err != nil {
		return fmt.Errorf("read the schema version of DATABASE_URL: %w", err)
	}
	switch {
	case found == want:
		return nil
	case found == 0:
		return fmt.Errorf("the database of DATABASE_URL has no schema (version 0) and this binary needs version %d: "+
			"run `orderpaid migrate` with the same DATABASE_URL, then start again", want)
	case found < want:
		return fmt.Errorf("the database of DATABASE_URL has schema version %d and this binary needs version %d: "+
			"run `orderpaid migrate` with the same DATABASE_URL, then start again", found, want)
	default:
		return fmt.Errorf("the database of DATABASE_URL has schema version %d, newer than version %d this binary needs: "+
			"a newer orderpaid migrated it; run that newer binary (`orderpaid migrate` of this one applies nothing)", found, want)
	}
}

// schemaVersion is the highest version in goose_db_version, 0 when the
// table does not exist or holds no row.
func schemaVersion(ctx context.Context, db database.DBTxConn) (int64, error) {
	store, err := database.NewStore(database.DialectPostgres, goose.DefaultTablename)
	if err != nil {
		return 0, err
	}
	ext, ok := store.(database.StoreExtender)
	if !ok {
		return 0, errors.New("goose's postgres store cannot tell whether its table exists")
	}
	exists, err := ext.TableExists(ctx, db)
	if err != nil || !exists {
		return 0, err
	}
	version, err := store.GetLatestVersion(ctx, db)
	if errors.Is(err, database.ErrVersionNotFound) {
		return 0, nil
	}
	return version, err
}
