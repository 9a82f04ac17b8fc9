package main

import (
	"fmt"
	"strings"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/payment"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/levers"
)

// faultPoints lists every fault point --faults can arm: levers.ParseFaults
// refuses any other name, so a misspelt point is an error instead of a fault
// that never fires. Each point is declared beside the code that hits it;
// levers, in the platform, cannot import those packages, so the list is
// gathered here, where everything is wired. A new point must be added here:
// TestFaultPointsListEveryHit fails until it is.
func faultPoints() []string {
	return []string{
		consumer.FaultAfterMarkPaid,
		consumer.FaultBeforeAck,
		consumer.FaultAfterProviderCall,
		consumer.FaultAfterGatewayRefund,
		payment.FaultBeforeGatewayCall,
		payment.FaultAfterGatewayCall,
	}
}

// labLevers turns the lab's flags of the serving command name into the
// levers its parts obey: --without (guards switched off) and --faults (fault
// points armed). Each value is checked first; then, outside a dev run
// (devRun: ORDERPAID_DEV=1, or `orderpaid all`), any lever pulled, and the
// wrong fix --dedupe-executions, is refused: in a production process they
// would make effects happen twice, and a log warning is easy to miss.
func labLevers(name string, devRun bool, without, faults string, dedupe bool) (levers.Levers, error) {
	lv, err := levers.ParseWithout(without)
	if err != nil {
		return levers.Levers{}, usageError{fmt.Errorf("%s: --without: %w", name, err)}
	}
	armed, err := levers.ParseFaults(faults, faultPoints(), crashNow)
	if err != nil {
		return levers.Levers{}, usageError{fmt.Errorf("%s: --faults: %w", name, err)}
	}
	var pulled []string
	if lv.GuardsOff() != "" {
		pulled = append(pulled, "--without "+lv.GuardsOff())
	}
	if strings.TrimSpace(faults) != "" {
		pulled = append(pulled, "--faults "+faults)
	}
	if dedupe {
		pulled = append(pulled, "--dedupe-executions")
	}
	if len(pulled) > 0 && !devRun {
		return levers.Levers{}, usageError{fmt.Errorf("%s: %s: lab levers, refused in a production process (they let effects happen twice): "+
			"for a workshop, test or scenario run set %s=1", name, strings.Join(pulled, ", "), config.DevVariable)}
	}
	return lv.WithFaults(armed), nil
}
