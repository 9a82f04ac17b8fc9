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

// InTx runs fn in a READ COMMITTED transaction and commits when fn returns
// nil. Any error from fn, and any panic, rolls the transaction back. A failed
// commit is reported as such: the caller must not assume its writes happened.
//
// When ctx carries an enclosing transaction (WithEnclosingTx), fn runs in a
// savepoint of it instead, whatever db is: an error rolls back to the
// savepoint, and success releases fn's writes into the enclosing
// transaction, which commits them, or not, later (see below).
func InTx(ctx context.Context, db Beginner, fn func(tx pgx.Tx) error) (err error) {
	tx, err := Begin(ctx, db)
	if err != nil {
		return err
	}
	defer End(ctx, tx, &err)
	return fn(tx)
}

// Begin begins a READ COMMITTED transaction on db, or a savepoint of the
// enclosing transaction of ctx (WithEnclosingTx), for a caller that ends it
// with End: the straight-line form of InTx.
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

// End commits tx when *err is nil and rolls it back otherwise; a failed
// commit becomes *err, and the caller must not assume its writes happened.
// Defer it right after Begin: `defer postgres.End(ctx, tx, &err)`.
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

// The enclosing transaction
//
// A consumer whose position commits with its effects (CONSUMER_POSITION=
// with-effects, broker.BatchReader) runs the handler inside the
// transaction that read the messages and will move the position. The
// handler does not change for it: the reader puts its transaction in each
// message's context (WithEnclosingTx), and then
//
//   - InTx, given such a context, opens a savepoint in it instead of a
//     transaction of its own: a failing step rolls back to the savepoint
//     and the rest of the batch goes on, and what a step "commits" is
//     released into the enclosing transaction, durable only when the
//     reader commits it with the position;
//   - a Routed pool runs each statement on the enclosing transaction of
//     its context, so the reads and writes a handler makes outside InTx
//     (its inbox look-ups, its execution log, the poison queue) are in it
//     too, see what it wrote, and never wait for its locks from another
//     connection (which would be a deadlock PostgreSQL cannot see: the
//     enclosing transaction would be waiting on its client, not on a lock).
//
// A transaction is one connection: statements on it run one at a time, so
// a handler in this mode must not use the database from several
// goroutines at once (the batch handlers call the provider side by side and
// write their answers afterwards, in one goroutine).

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

// Routed is a pool whose statements run on the enclosing transaction of
// their context when it has one (WithEnclosingTx), and on the pool
// otherwise. It has the method set sqlc's queries.New takes.
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

// Exec runs sql on the enclosing transaction of ctx, or the pool.
func (r Routed) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return r.db(ctx).Exec(ctx, sql, args...)
}

// Query runs sql on the enclosing transaction of ctx, or the pool.
func (r Routed) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return r.db(ctx).Query(ctx, sql, args...)
}

// QueryRow runs sql on the enclosing transaction of ctx, or the pool.
func (r Routed) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return r.db(ctx).QueryRow(ctx, sql, args...)
}
