package app

import (
	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
)

// FaultPoints lists every fault point orderpaid-lab's --faults can arm: fault.Parse refuses
// any other name, so a misspelt point is an error instead of a fault that
// never fires. Each point is declared beside the code that hits it; fault,
// in the platform, cannot import those packages, so the list is gathered
// here, where everything is wired. A new point must be added here:
// TestFaultPointsListEveryHit fails until it is.
func FaultPoints() []string {
	return []string{
		consumer.FaultAfterMarkPaid,
		consumer.FaultBeforeAck,
		consumer.FaultAfterProviderCall,
		consumer.FaultAfterGatewayRefund,
		payment.FaultBeforeGatewayCall,
		payment.FaultAfterGatewayCall,
		broker.FaultBeforeOffsetCommit,
		outbox.FaultBeforeConfirm,
	}
}
