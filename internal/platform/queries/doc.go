// Package queries is the code sqlc generates from sql/migrations (the schema)
// and sql/queries (the statements the service runs; the lab's own queries,
// bench.sql and scenario.sql, are here too for now). Do not edit it by hand:
// change the SQL and run `make generate`. Package postgres, beside it,
// connects, migrates and runs transactions; this one holds what they run.
//
// It exists so that all SQL lives in one place, readable as SQL, and every
// guard of the flow can be found by its query name: OrderMarkPaid (the state
// check), LedgerEntryInsert (the unique ledger key), WebhookInboxInsert and
// ConsumerInboxInsert (the inboxes), IdempotencyKeyInsert (the public
// Idempotency-Key), OrderChargeInsert (one charge per order). This file is the only one here that sqlc does not write.
package queries
