// Command orderpaid is the service and its operator's tools: the API, the
// worker (the outbox relay and the consumers), migrate, backfill,
// reprocess, retention, reconcile and doctor. It links nothing of the lab:
// the fakes, the scenarios, the switches that turn guards off and the
// levers that crash a process are orderpaid-lab's (cmd/orderpaid-lab), and
// TestProductionLinksNoLab holds it. Run `orderpaid -h` for the list.
package main

import "github.com/orderpaid/orderpaid/internal/app"

func main() { app.Main("orderpaid", app.Production(nil)) }
