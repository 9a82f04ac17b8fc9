// Package db is the code sqlc generates from sql/migrations (the schema) and
// sql/queries (every statement the service runs). Do not edit it by hand:
// change the SQL and run `make generate`.
//
// It exists so that all SQL lives in one place, readable as SQL, and every
// guard of the flow can be found by its query name: OrderMarkPaid (the state
// check), LedgerEntryInsert (the unique ledger key), WebhookInboxInsert and
// ConsumerInboxInsert (the inboxes), IdempotencyKeyInsert (the public
// Idempotency-Key). This file is the only one here that sqlc does not write.
package db
