// Package postgres owns the connection to PostgreSQL: the pool, the schema
// migrations and the one transaction helper every write goes through.
//
// The guarantees of this project live in the database (the order status
// check, the ledger's UNIQUE business key, the inboxes' primary keys), so the
// code that opens transactions is kept small, in one place, and tested.
package postgres
