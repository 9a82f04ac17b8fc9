package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Beginner is what InTx needs: a pool, or a connection.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

var _ Beginner = (*pgxpool.Pool)(nil)

// InTx runs fn in a READ COMMITTED transaction, committed when fn returns
// nil and rolled back on an error or a panic; a failed commit is an error.
// Under an enclosing transaction (WithEnclosingTx) fn runs in a savepoint of
// it instead, whatever db is (see below).
func InTx(ctx context.Context, db Beginner, fn func(tx pgx.Tx) error) (err error) {
	tx, err := Begin(ctx, db)
	if err != nil {
		return err
	}
	defer End(ctx, tx, &err)
	return fn(tx)
}

// Begin is the straight-line form of InTx: it begins the transaction (or
// savepoint) that End ends.
func Begin(ctx context.Context, db Beginner) (pgx.Tx, error) {
	if enclosing, ok := EnclosingTx(ctx); ok {
		db = enclosing
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin transaction: %w", err)
	}
	return tx, nil
}

// End commits tx when *err is nil, else rolls it back; a failed commit
// becomes *err. Defer it right after Begin: `defer postgres.End(ctx, tx, &err)`.
func End(ctx context.Context, tx pgx.Tx, err *error) {
	if p := recover(); p != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		panic(p)
	}
	if *err != nil {
		if rbErr := tx.Rollback(context.WithoutCancel(ctx)); rbErr != nil && !errors.Is(rbErr, pgx.ErrTxClosed) {
			*err = errors.Join(*err, fmt.Errorf("roll back transaction: %w", rbErr))
		}
		return
	}
	if commitErr := tx.Commit(ctx); commitErr != nil {
		*err = fmt.Errorf("commit transaction: %w", commitErr)
	}
}

// The enclosing transaction. A consumer whose position commits with its
// effects (CONSUMER_POSITION=with-effects, broker.BatchReader) runs the
// handler, unchanged, in the transaction that read the messages: the reader
// puts it in each message's context (WithEnclosingTx). InTx then opens a
// savepoint in it, so a failing step rolls back alone and a step's "commit"
// is durable only with the position; a Routed pool runs each statement on it,
// so a handler's other reads and writes (inbox, execution log, poison queue)
// see its writes and never wait for its locks from another connection, a
// deadlock PostgreSQL cannot see. One transaction is one connection: such a
// handler must not use the database from several goroutines at once.

type enclosingTxKey struct{}

// WithEnclosingTx returns ctx carrying tx as the enclosing transaction of
// every InTx and Routed statement under it.
func WithEnclosingTx(ctx context.Context, tx pgx.Tx) context.Context {
	return context.WithValue(ctx, enclosingTxKey{}, tx)
}

// EnclosingTx returns the enclosing transaction of ctx, if it has one.
func EnclosingTx(ctx context.Context) (pgx.Tx, bool) {
	tx, ok := ctx.Value(enclosingTxKey{}).(pgx.Tx)
	return tx, ok
}

// Routed is a pool whose statements run on their context's enclosing
// transaction when it has one; it has the method set queries.New takes.
type Routed struct{ Pool *pgxpool.Pool }

func (r Routed) db(ctx context.Context) interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
} {
	if tx, ok := EnclosingTx(ctx); ok {
		return tx
	}
	return r.Pool
}

// Exec, Query and QueryRow run sql on ctx's enclosing transaction, or the pool.
func (r Routed) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return r.db(ctx).Exec(ctx, sql, args...)
}

func (r Routed) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return r.db(ctx).Query(ctx, sql, args...)
}

func (r Routed) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return r.db(ctx).QueryRow(ctx, sql, args...)
}
