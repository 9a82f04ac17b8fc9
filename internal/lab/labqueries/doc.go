// Package labqueries is the code sqlc generates from sql/lab: the statements
// only the lab runs. internal/lab/bench, internal/lab/soak and
// internal/lab/scenario seed a throwaway database in bulk and read back what
// happened; the lab page (internal/lab/labpage) reads a dev run's recent
// orders and each one's timeline. The service never imports it; its own
// statements are in internal/platform/queries, from the same schema
// (sql/migrations). Do not edit it by hand: change the SQL and run `make
// generate`.
//
// What the audit counts is not defined here: the bench and the soak read
// each order's effects with the service's AuditOrder, the query of GET
// /orders/{id}/audit, and add to it only what the audit does not show
// (BenchOrders: status, amount, commission cents). This file is the only one
// here that sqlc does not write.
package labqueries
