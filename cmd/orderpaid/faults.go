package main

import (
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/faultpoint"
)

// faultPoints lists every fault point --faults can arm: faultpoint.Parse
// refuses any other name, so a misspelt point is an error instead of a fault
// that never fires. Each point is declared beside the code that hits it;
// faultpoint cannot import those packages, so the list is gathered here,
// where everything is wired. A new point must be added here:
// TestFaultPointsListEveryHit fails until it is.
func faultPoints() []string {
	return []string{
		faultpoint.AfterMarkPaid,
		faultpoint.BeforeAck,
		faultpoint.AfterProviderCall,
		payment.FaultBeforeGatewayCall,
	}
}
