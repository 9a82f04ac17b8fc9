// Package bench measures the real pipeline: `orderpaid-lab fakes`, `orderpaid api`
// and `orderpaid worker` started as child processes against a fresh
// PostgreSQL database and the chosen broker, fed with signed payment webhooks,
// timed from "webhook accepted" to "notification sent" at the fake provider.
//
// A number on its own says little about a design (the same code runs ten
// times faster on a bigger machine), so every run also measures the
// machine's ceiling: the transaction of one effect step (mark the order paid,
// record the transition, write the confirmation to the outbox, in one
// transaction, by Config.CeilingWorkers goroutines) on the same server. The
// report gives end-to-end throughput as a ratio of that ceiling, and the
// guards' cost as the ratio of a run with every guard on to a run with every
// guard off (`--without` all of them), both in the same invocation.
//
// Each run (Run, one Spec) gets its own database and broker prefix and
// reports: orders per second end to end, end-to-end latency p50/p99 (from
// each webhook's 2xx to the provider's sent_at of its notification), relay
// lag p50/p99 (the worker's orderpaid_outbox_relay_lag histogram, both hops),
// executions versus effects counted in the database and at the provider, and
// CPU and peak RSS (VmHWM) of each child process, PostgreSQL and the broker,
// read from /proc. See docs/performance.md for the method and the numbers.
//
// The soak (internal/lab/soak) reuses the stack and the load generator.
package bench
