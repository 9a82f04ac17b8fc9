package main

import (
	"fmt"
	"strings"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/switches"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// faultPoints lists every fault point --faults can arm: fault.Parse refuses
// any other name, so a misspelt point is an error instead of a fault that
// never fires. Each point is declared beside the code that hits it; fault,
// in the platform, cannot import those packages, so the list is gathered
// here, where everything is wired. A new point must be added here:
// TestFaultPointsListEveryHit fails until it is.
func faultPoints() []string {
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

// labPulls is what the lab pulls in one serving process: the guards
// switched off and the fault points armed. The zero value is production's:
// every guard on, no fault armed.
type labPulls struct {
	guards *switches.Set
	faults *fault.Set
}

// labLevers turns the lab's flags of the serving command name into what
// its parts are wired with: --without (guards switched off) and --faults
// (fault points armed). Each value is checked first; then, outside a dev
// run (devRun: ORDERPAID_DEV=1, or `orderpaid all`), any of them, and the
// wrong fix --dedupe-executions, is refused: in a production process they
// would make effects happen twice, and a log warning is easy to miss.
func labLevers(name string, devRun bool, without, faults string, dedupe bool) (labPulls, error) {
	off, err := switches.Parse(without)
	if err != nil {
		return labPulls{}, usageError{fmt.Errorf("%s: --without: %w", name, err)}
	}
	armed, err := fault.Parse(faults, faultPoints(), crashNow)
	if err != nil {
		return labPulls{}, usageError{fmt.Errorf("%s: --faults: %w", name, err)}
	}
	var pulled []string
	if off.Fixed() != "" {
		pulled = append(pulled, "--without "+off.Fixed())
	}
	if strings.TrimSpace(faults) != "" {
		pulled = append(pulled, "--faults "+faults)
	}
	if dedupe {
		pulled = append(pulled, "--dedupe-executions")
	}
	if len(pulled) > 0 && !devRun {
		return labPulls{}, usageError{fmt.Errorf("%s: %s: lab levers, refused in a production process (they let effects happen twice): "+
			"for a workshop, test or scenario run set %s=1", name, strings.Join(pulled, ", "), config.DevVariable)}
	}
	if !devRun {
		return labPulls{}, nil
	}
	return labPulls{guards: off, faults: armed}, nil
}
