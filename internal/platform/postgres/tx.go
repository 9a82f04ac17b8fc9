package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Beginner is what InTx needs: a pool, or a connection.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

var _ Beginner = (*pgxpool.Pool)(nil)

// InTx runs fn in a READ COMMITTED transaction and commits when fn returns
// nil. Any error from fn, and any panic, rolls the transaction back. A failed
// commit is reported as such: the caller must not assume its writes happened.
//
// When ctx carries an enclosing transaction (WithEnclosingTx), fn runs in a
// savepoint of it instead, whatever db is: an error rolls back to the
// savepoint, and success releases fn's writes into the enclosing
// transaction, which commits them, or not, later (see enclosing.go).
func InTx(ctx context.Context, db Beginner, fn func(tx pgx.Tx) error) (err error) {
	if enclosing, ok := EnclosingTx(ctx); ok {
		db = enclosing
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
			panic(p)
		}
	}()
	if fnErr := fn(tx); fnErr != nil {
		if rbErr := tx.Rollback(context.WithoutCancel(ctx)); rbErr != nil && !errors.Is(rbErr, pgx.ErrTxClosed) {
			return errors.Join(fnErr, fmt.Errorf("roll back transaction: %w", rbErr))
		}
		return fnErr
	}
	if commitErr := tx.Commit(ctx); commitErr != nil {
		return fmt.Errorf("commit transaction: %w", commitErr)
	}
	return nil
}
