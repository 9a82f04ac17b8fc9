// Package netfault puts a misbehaving network between a process and what it
// talks to: PostgreSQL, the broker, the notification provider. It is part of
// the lab (tests and scenarios), never of the service.
//
// A timeout is one of the ways a backend repeats work, and the nastiest one
// leaves partial state: the request reached the other side and took effect,
// only the answer was lost. The caller sees an error, retries, and meets its
// own first attempt. Only the guards make that harmless.
//
// Each Proxy is a toxiproxy proxy (github.com/Shopify/toxiproxy/v2) running
// in the calling process, listening on a port of 127.0.0.1 between 20000 and
// 31999. Point a client at Addr instead of the real server (Via rewrites a
// URL) and inject faults while it runs:
//
//   - toxiproxy's own toxics (AddToxic): "latency", "reset_peer" (close the
//     connection abruptly), "timeout" (stop the data, then close), ...;
//   - a partition (Disable, then Enable): every connection is cut and new
//     ones are refused until it ends;
//   - the lost commit acknowledgement (LoseCommitAck): the one fault a
//     generic proxy cannot aim, because it needs to read PostgreSQL's wire
//     protocol. The server commits the transaction, and the proxy closes the
//     connection instead of forwarding the server's "COMMIT" answer. The
//     client's Commit returns an error for a transaction that is durable.
//
// The same lost answer without a proxy, aimed at one statement of a process
// by its span (LoseAnswers, answer.go), is the crash matrix's "lost" kind:
// the lab's pool dials connections that cut it.
//
// The internal/lab/scenario catalogue uses it for the scenario commit-ack-lost;
// the network fault tests of cmd/orderpaid-lab use it against a real worker.
package netfault
