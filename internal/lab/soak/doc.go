// Package soak runs the whole flow for a long time under faults and then
// checks that nothing happened twice and nothing was lost.
//
// A soak (Run) pays Config.Orders orders through the real processes (the
// stack of internal/lab/bench: `orderpaid fakes`, `orderpaid api` and several
// `orderpaid worker`), with duplicate webhooks mixed in (a provider
// redelivering an event, and a provider sending a second event for the same
// payment), while a fault injector:
//
//   - SIGKILLs a random worker process, and starts a new one, as an OOM
//     killer and an orchestrator would;
//   - restarts a worker gracefully (SIGTERM, then a new one), which stops its
//     outbox relay and its consumers in the middle of a batch;
//   - restarts the broker once (a private nats-server, or RabbitMQ's app);
//   - restarts PostgreSQL once (Config.RestartPostgres; disruptive for every
//     other user of the server, so tests enable it only with
//     ORDERPAID_DISRUPTIVE=1).
//
// When the load is delivered and the faults stop, the soak waits until the
// flow settles and checks every invariant: each order paid once, one
// commission each, the sum of the commissions exact, one notification each
// at the provider, the poison queue empty, the outbox drained, nothing lost.
// Report.Print writes one screen; `orderpaid soak` exits non-zero on any
// violation.
package soak
