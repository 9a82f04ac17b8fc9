// Package webhook receives the payment provider's events.
//
// Providers deliver webhooks at least once and retry until they get a 2xx, so
// the same event arrives again after a timeout, a 5xx, or for no visible
// reason. The receiver's job is to accept each event exactly once: it checks
// the signature (signature.go), parses strictly (event.go), and then, in ONE
// transaction, records the event id in the webhook inbox and writes
// order_paid to the outbox (ingest.go). A duplicate finds its inbox row,
// writes nothing and still answers 2xx, so the provider stops retrying.
//
// Two different events for one payment are both accepted: the inbox dedupes
// deliveries of an event, not payments. Protecting the payment's effects is
// the order_paid consumer's job, by business key.
package webhook
