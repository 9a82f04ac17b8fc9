// Package queries is the code sqlc generates from sql/migrations (the schema)
// and sql/queries: every statement the service runs, and nothing else (the
// lab's own queries, which seed and inspect throwaway databases and feed the
// lab page, are in sql/lab and internal/lab/labqueries). Do not edit it by
// hand: change the SQL and run `make generate`. Package postgres, beside it, connects,
// migrates and runs transactions; this one holds what they run.
//
// It exists so that the service's SQL lives in one place, readable as SQL,
// and every guard of the flow can be found by its query name: OrderMarkPaid
// (the state check), LedgerEntryInsert (the unique ledger key),
// WebhookInboxInsert and ConsumerInboxInsert (the inboxes),
// IdempotencyKeyInsert (the public Idempotency-Key), OrderChargeInsert (one
// charge per order). AuditOrder (GET /orders/{id}/audit) is the one
// definition of what the audit counts: the lab's bench and soak read it too.
// This file is the only one here that sqlc does not write.
package queries
