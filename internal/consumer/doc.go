// Package consumer holds the consumers of the order_paid flow and the router
// that runs them.
//
// A handler here may run any number of times for one message: the broker
// redelivers, the relay re-publishes, an operator replays, two workers race.
// None of that is prevented. Instead each effect the handler produces is
// protected by its own guard, and each guard reports Applied or
// AlreadyApplied. Every run is written to the execution log, so the audit can
// set "how often did it run?" against "what happened?".
package consumer
