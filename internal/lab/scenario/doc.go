// Package scenario is the duplication scenario catalogue: every way this
// backend repeats work (a client retry, a webhook redelivered, a broker
// redelivery, a worker killed mid-batch, two workers on one message, an
// operator's replay, a backfill run twice, ...), reproduced on demand
// against the real thing, and checked.
//
// Repetition is the normal case. A scenario makes one repetition happen and
// then compares how often the code ran (executions) with what really
// happened (effects). With every guard on, each effect happens once. With
// one guard off (--without, internal/lab/switches) the scenario expects the damage that guard
// prevents, double commission, a lost or duplicate e-mail, a double charge,
// and checks it like any other outcome: a guard switched off that changes
// nothing is a failure too, because then the scenario proves nothing.
//
// # Real processes, real broker, real database
//
// The runner (RunOne) gives each scenario a Stage: a fresh database on the
// server of Config.AdminURL, migrated by `orderpaid migrate`; free ports on
// 127.0.0.1; and the orderpaid binary (Config.Bin) started as child
// processes, `orderpaid-lab fakes`, `orderpaid api`, one or more
// `orderpaid worker`. A scenario drives the flow over HTTP, injects its
// fault (the fakes' control endpoints, --faults, --without, SIGKILL,
// SIGTERM, a database setting) and runs the operator's commands as
// processes too. The runner then waits until the system has settled and
// reads the counts from the audit endpoint, the database and the fakes'
// records of real charges and e-mails. Scenarios share nothing, so they run
// in parallel (Config.Parallel).
//
// The catalogue (Catalogue) is described section by section, with real
// output, in docs/scenarios.md; `orderpaid-lab scenario` is its command line.
package scenario
