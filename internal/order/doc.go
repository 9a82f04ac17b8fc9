// Package order owns the order and its one irreversible transition,
// pending -> paid.
//
// The transition is protected by a state check (markpaid.go): the UPDATE
// carries the expected current state in its WHERE clause, so the database,
// not the handler, decides which of several concurrent or repeated attempts
// moves the order.
package order
