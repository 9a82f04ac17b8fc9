// Package fakes holds in-memory stand-ins for the two external systems
// orderpaid talks to: a payment gateway and a notification (e-mail) provider.
// `orderpaid-lab fakes` serves them on FAKES_ADDR; `orderpaid-lab all` runs them in
// the same process as the service.
//
// # Why they exist
//
// Both systems perform effects that cannot be undone: once a customer is
// charged, the money is gone; once an e-mail is sent, it is in the inbox.
// Everything else in this repository is about making sure those effects
// happen once, so the tests need something that records what really
// happened. The fakes are that ground truth: [Gateway.Charges],
// [Gateway.Refunds] and [Notifier.Notifications] (GET /charges, GET /refunds
// and GET /notifications) list the effects actually performed, and a correct
// run leaves one charge and one e-mail per order, and at most one refund,
// however many retries, redeliveries and crashes it went through.
//
// # What they do, like real providers
//
//   - They deduplicate by the Idempotency-Key header. The first request with
//     a key performs the effect and stores the answer; the same key with the
//     same body gets the stored answer again, byte for byte, with
//     Idempotent-Replayed: true, and performs nothing; the same key with a
//     different body is refused with 422. See idempotency.go. Charges and
//     refunds share the gateway's keys.
//   - The gateway refunds a charge (POST /refunds, by charge id) only with
//     money still left on it: the same money asked back under another key is
//     refused with 409, so it is never refunded twice. See refund.go.
//   - After a charge the gateway delivers a signed payment.succeeded webhook,
//     after a refund a payment.refunded one, asynchronously (it may arrive
//     before the request's own response does), and retries with exponential
//     backoff until it gets a 2xx. Real providers deliver at least once, so
//     the receiver must deduplicate by event id. See delivery.go.
//
// # What they do that real providers only do on a bad day
//
// They can be told, over HTTP (POST /control/gateway, POST
// /control/notifications) or in process ([Gateway.SetControl],
// [Notifier.SetControl]), to fail the next N requests (fail_next; the
// gateway counts charges and refunds together) with 503 or another status
// (fail_status, e.g. 429 for a rate limit) and a Retry-After header
// (retry_after_s), to answer slowly after the effect is done (a client
// timeout after the money moved), to deliver each webhook several times, and
// to refuse the refunds of one order for good (refuse_refunds_of, 402 or
// another 4xx, every time it is asked: GET /refund-refusals lists them).
// Redeliveries of an existing charge, with the same or fresh event ids,
// sequential or released at the same moment, are asked for with POST
// /charges/{id}/redeliver. routes.go lists every route.
package fakes
