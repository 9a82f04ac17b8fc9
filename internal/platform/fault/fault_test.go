package fault_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// Points as the story declares them (consumer.FaultAfterMarkPaid, ...): this
// package does not import the story.
const (
	afterMarkPaid     = "order_paid.after_mark_paid"
	beforeAck         = "order_paid.before_ack"
	afterProviderCall = "order_confirmed.after_provider_call"
	beforeGatewayCall = "payment.before_gateway_call"
)

var known = []string{afterMarkPaid, beforeAck, beforeGatewayCall}

// A spec naming a point the code does not hit would arm nothing: the run
// meant to show a fault would pass without it. ParseFaults refuses it and
// lists the points it knows.
func TestParseFaultsRefusesUnknownPoints(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{
		"order_paid.after_mark_payd=error:1", // misspelt
		"order_paid.after_mark_paid=error:1,order_paid.before_ak=crash",
		"AfterMarkPaid=error",        // a Go constant's name, not the point's
		afterProviderCall + "=error", // a real point, but not in this known list
	} {
		_, err := fault.Parse(spec, known, nil)
		if err == nil {
			t.Errorf("ParseFaults(%q) accepted an unknown fault point", spec)
			continue
		}
		for _, want := range []string{"unknown fault point", afterMarkPaid, beforeAck, beforeGatewayCall} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ParseFaults(%q): error %q does not contain %q", spec, err, want)
			}
		}
	}
}

func TestParseFaultsArmsKnownPoints(t *testing.T) {
	t.Parallel()
	armed, err := fault.Parse(" order_paid.after_mark_paid=error:1 , payment.before_gateway_call=error", known, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := armed
	if err := s.Hit(afterMarkPaid); !errors.Is(err, fault.ErrInjected) {
		t.Errorf("first hit of %s: %v, want ErrInjected", afterMarkPaid, err)
	}
	if err := s.Hit(afterMarkPaid); err != nil {
		t.Errorf("second hit of %s (armed once): %v, want nil", afterMarkPaid, err)
	}
	for range 3 {
		if err := s.Hit(beforeGatewayCall); !errors.Is(err, fault.ErrInjected) {
			t.Errorf("hit of %s (armed for every hit): %v, want ErrInjected", beforeGatewayCall, err)
		}
	}
	if err := s.Hit(beforeAck); err != nil {
		t.Errorf("hit of the unarmed %s: %v, want nil", beforeAck, err)
	}
}

func TestParseFaultsRefusesBadModesAndCounts(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"order_paid.before_ack":           "want name=mode[:count]",
		"order_paid.before_ack=explode":   "mode must be error, crash or pause",
		"order_paid.before_ack=error:0":   "count must be a positive integer",
		"order_paid.before_ack=error:one": "count must be a positive integer",
	} {
		if _, err := fault.Parse(spec, known, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseFaults(%q): err = %v, want one containing %q", spec, err, want)
		}
	}
}

// A point armed in Crash mode calls crash, and the nil Set (production)
// fires nothing.
func TestCrashAndInertSet(t *testing.T) {
	t.Parallel()
	crashed := 0
	s, err := fault.Parse(beforeAck+"=crash:1", known, func() { crashed++ })
	if err != nil {
		t.Fatal(err)
	}
	var none *fault.Set
	if err := none.Hit(beforeAck); err != nil || crashed != 0 {
		t.Errorf("Hit without a fault set: %v, crashed %d; want nil, 0", err, crashed)
	}
	if err := s.Hit(beforeAck); !errors.Is(err, fault.ErrInjected) || crashed != 1 {
		t.Errorf("Hit of a point armed to crash: %v, crashed %d; want ErrInjected, 1", err, crashed)
	}
}

// A point armed in Pause mode holds its caller, then lets the step go on
// (nil, no crash), for as many hits as armed; the next hit passes at once.
func TestPauseHoldsTheStep(t *testing.T) {
	t.Parallel()
	crashed := 0
	s, err := fault.Parse(beforeAck+"=pause:1", known, func() { crashed++ })
	if err != nil {
		t.Fatal(err)
	}
	const pause = 50 * time.Millisecond
	fault.SetPause(s, pause)
	start := time.Now()
	if err := s.Hit(beforeAck); err != nil || crashed != 0 {
		t.Errorf("Hit of a point armed to pause: %v, crashed %d; want nil, 0", err, crashed)
	}
	if held := time.Since(start); held < pause {
		t.Errorf("Hit of a point armed to pause returned after %s, want at least %s", held, pause)
	}
	start = time.Now()
	if err := s.Hit(beforeAck); err != nil {
		t.Errorf("second hit (paused once): %v, want nil", err)
	}
	if held := time.Since(start); held >= pause {
		t.Errorf("second hit (paused once) held %s, want no pause", held)
	}
}
