// Package reprocess is the operator's replay tool: one order, one message, or
// the whole poison queue, sent again through the outbox and therefore through
// exactly the same guards as live traffic.
//
// Manual reprocessing is one more way a backend repeats work. It is safe only
// because nothing downstream trusts "this message was never seen": the state
// check, the ledger key and the inbox answer AlreadyApplied for whatever was
// done before.
//
// # What it shows first
//
// Every replay first prints its plan, one line per message: topic, message
// id, order, age, and what it will do (replay, replay with a warning,
// refused). With DryRun it stops there and writes nothing.
//
// # The retention window
//
// The inboxes forget after the retention window (internal/ops/retention). What a
// replay past the window may do depends on the guard behind its effects:
//
//   - order_paid: its effects are guarded by the state check and the unique
//     ledger key, which are rows that never expire. A replay past the window
//     is safe; the plan warns and replays.
//   - order_confirmed: its effect, the e-mail, is guarded by the consumer
//     inbox and the provider's idempotency key, and both forget: the inbox
//     after the window, the provider after its own key retention. A replay
//     past the window may send the e-mail again, so it is refused unless
//     Force is set (check the provider's log first).
package reprocess
