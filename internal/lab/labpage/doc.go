// Package labpage is the lab page, GET /lab: a view of one dev run of the
// service (its recent orders, each order's timeline, the poison queue, the
// fakes' settings) and its levers (redeliver a webhook, make a provider
// fail, replay a message, switch a guard off, arm a fault point).
//
// It is lab material: cmd/orderpaid-lab builds it in a dev run only and hands
// it to the API (httpapi.Deps.Lab), which adds its routes to its own router
// and knows nothing else of it. labpage.go is what the page is given and
// its routes; state.go what it polls; controls.go, fakes.go and faults.go
// what it does; origin.go the check every control passes first; request.go
// how it reads a request and answers, as the API does; assets/ the page
// itself (embedded); sql/lab/lab_page.sql the queries it reads
// (internal/lab/labqueries).
package labpage
