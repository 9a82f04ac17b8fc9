// Package soak runs the whole flow for a long time under faults and then
// checks that nothing happened twice and nothing was lost.
//
// A soak (Run) pays Config.Orders orders through the real processes (the
// stack of internal/lab/bench: `orderpaid-lab fakes`, `orderpaid-lab api` and several
// `orderpaid-lab worker`), with duplicate webhooks mixed in (a provider
// redelivering an event, and a provider sending a second event for the same
// payment), while a fault injector:
//
//   - SIGKILLs a random worker process, and starts a new one, as an OOM
//     killer and an orchestrator would;
//   - restarts a worker gracefully (SIGTERM, then a new one), which stops its
//     outbox relay and its consumers in the middle of a batch;
//   - restarts the broker once (a private nats-server, or RabbitMQ's app;
//     never the in-process Kafka cluster, which keeps its records in
//     memory only);
//   - restarts PostgreSQL once (Config.RestartPostgres; disruptive for every
//     other user of the server, so tests enable it only with
//     ORDERPAID_DISRUPTIVE=1).
//
// On the in-process Kafka cluster (broker kafka without KAFKA_BROKERS) a
// SIGKILL waits until every consumer group is stable, one member per
// running worker: kfake never expires a member killed in its first
// JoinGroup (internal/lab/kafkalab/groups.go), so the kills come about one
// per session timeout (10s) there.
//
// When the load is delivered and the faults stop, the soak waits until the
// flow settles and checks every invariant: each order paid once, one
// commission each, the sum of the commissions exact, one notification each
// at the provider, the poison queue empty, the outbox drained, nothing lost.
// Report.Print writes one screen; `orderpaid-lab soak` exits non-zero on any
// violation.
//
// The reconcile soak (RunReconcile, `orderpaid-lab soak --reconcile`) holds
// `orderpaid reconcile` (internal/ops/reconcile) to what it promises beside
// live traffic. Customers pay orders through the api, each under an
// Idempotency-Key of its own, while the api is SIGKILLed every few seconds
// and started again; two proxies in the soak's process (proxies.go) slow
// the way to the gateway, so that a kill leaves attempts the gateway never
// saw and charges whose answer nobody stored, and lose a share of the
// gateway's payment.succeeded webhooks. Some customers give up after no
// answer; the others retry with the same key and wait out the lease. Two
// reconcile run at once, as child processes, every few seconds and after
// the load; then the soak checks that every charge was paid once, nothing
// is left charging past its lease, each charge reconcile completed was
// completed once, the audit's charges are the gateway's, and a last
// reconcile finds nothing and exits 0.
package soak
