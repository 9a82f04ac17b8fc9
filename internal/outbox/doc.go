// Package outbox is the transactional outbox: messages are written to a table
// in the same transaction as the business change they announce, and a relay
// copies them to the broker afterwards.
//
// Effect protected: "the confirmation was published". Without the outbox a
// handler commits and then publishes; a crash in between loses the message
// (the order is paid, nobody is told), and publishing before the commit sends
// a phantom (the message goes out, the transaction rolls back). With it, the
// message exists exactly when the change does.
//
// The relay (watermill's forwarder) is at-least-once: a crash after publishing
// but before recording its progress publishes the same rows again. Every
// message keeps its deterministic id through the relay, so the consumers'
// guards absorb the repeat.
package outbox
