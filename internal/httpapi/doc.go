// Package httpapi is the public HTTP edge: orders, payments with an
// Idempotency-Key, the provider's webhooks, the audit and the health checks.
//
// routes.go lists every route; problem.go is the one place where errors
// become HTTP status codes (RFC 9457 problem+json). Handlers decode, call the
// domain packages and encode: the guarantees live in those packages and in
// the database, not here.
package httpapi
