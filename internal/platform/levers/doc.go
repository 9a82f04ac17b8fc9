// Package levers holds the lab's levers: the switches that turn the flow's
// guards off, one at a time, and the fault points that make a step fail or
// the process crash on demand. The scenarios, the workshop, bench and soak
// pull them to watch the damage a missing guard does and to reproduce a
// partial failure.
//
// One value, Levers, carries both. The story's parts that have a lever
// (webhook.Ingestor, payment.Service, consumer.Consumers and the notify
// client) take it the same way, WithLevers, and the zero value is
// production: every guard on, no fault armed. Only a process started in
// workshop mode (ORDERPAID_DEV=1, or `orderpaid all`) accepts the flags that
// set them (--without, --faults); cmd/orderpaid refuses them elsewhere.
//
// A lever does not remove code. Switching a guard off makes the guarded call
// pick the realistic mistake the guard prevents, kept in the guard's own
// package beside it (order.MarkPaidUnguarded next to order.MarkPaid), so that
// the lesson and the code it is about are one file apart.
package levers
