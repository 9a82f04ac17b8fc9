// Package retention removes what the guards no longer need: old rows of the
// webhook inbox, the consumer inbox and the execution log, outbox rows the
// relay has published, and, on the postgres broker, messages every consumer
// group has read.
//
// # Why the inboxes can be cleaned at all
//
// An inbox row answers one question: "has this message id been handled?".
// It is needed only while a copy of that message can still arrive. Copies
// come from four places, each bounded in time:
//
//   - the provider retries a webhook for a bounded time (Stripe: up to three
//     days), always with the same event id;
//   - the broker redelivers an unacknowledged message within seconds or
//     minutes (lease, AckWait, nack);
//   - the relay re-forwards outbox rows it had not yet marked as relayed,
//     right after a crash;
//   - an operator re-enqueues a message (orderpaid reprocess --message),
//     which writes a fresh copy to the outbox.
//
// So a row is removed only when it is older than the window (InboxWindow,
// 7 days by default, never less than MinInboxWindow = 72h, the longest
// provider retry horizon) AND, for the consumer inbox, no copy of its
// message was written to the outbox within the window. The reprocess tool
// refuses to replay an order_confirmed older than the same window, because
// its inbox row may be gone.
//
// A row's age is read on the database's clock, the one that stamped it:
// each run's cutoffs are now() minus each window, computed in SQL
// (RetentionCutoffs). A host whose clock is days ahead would otherwise cut
// into rows written minutes ago.
//
// # Why correctness does not depend on it
//
// The inboxes are an optimisation and a first line, not the last one: once a
// row is gone, a late copy of its message runs the handler again, and the
// guards that never expire answer it: the state check (the order is paid),
// the unique ledger key (the commission exists), and the provider's
// idempotency key. retention_test.go proves it by cleaning the inboxes and
// redelivering everything.
//
// # Safe to run twice, and concurrently
//
// Every delete takes at most BatchSize rows, locked FOR UPDATE SKIP LOCKED
// (sql/queries/retention.sql): two cleaners at once take disjoint rows and
// never wait for each other, and a row deleted by one is simply not found by
// the other. A second run finds nothing left to delete.
//
// The execution log is evidence for the audit endpoint and the scenarios,
// never read by a guard; it is kept for ExecutionWindow (30 days).
//
// # What the audit says once evidence is gone
//
// Three counts of GET /orders/{id}/audit read tables this package cleans:
// executions (the execution log), confirmation_enqueued (the outbox) and
// confirmation_delivered (the order_confirmed consumer inbox). Once their
// rows are gone they read 0 for an order whose e-mail was sent. So each
// DELETE notes, in the same statement, every order it removed such a row of
// in audit_cleaned (order id, evidence), and the audit lists them under
// "cleaned": those counts are what is left, not what happened. The note is
// exact (an order whose rows were not removed is never listed) and atomic
// with the delete: a crash cannot remove rows without the note. Rows the
// audit does not count (an order_paid outbox row, an operator's replay, a
// row without an order) leave no note. audit_cleaned is never cleaned: at
// most three small rows per order, like the effect tables it stands beside.
package retention
