package faultpoint_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/platform/faultpoint"
)

var known = []string{faultpoint.AfterMarkPaid, faultpoint.BeforeAck, "payment.before_gateway_call"}

// A spec naming a point the code does not hit would arm nothing: the run
// meant to show a fault would pass without it. Parse refuses it and lists
// the points it knows.
func TestParseRefusesUnknownPoints(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{
		"order_paid.after_mark_payd=error:1", // misspelt
		"order_paid.after_mark_paid=error:1,order_paid.before_ak=crash",
		"AfterMarkPaid=error",                   // the Go constant's name, not the point's
		faultpoint.AfterProviderCall + "=error", // a real point, but not in this known list
	} {
		_, err := faultpoint.Parse(spec, known, nil)
		if err == nil {
			t.Errorf("Parse(%q) accepted an unknown fault point", spec)
			continue
		}
		for _, want := range []string{"unknown fault point", faultpoint.AfterMarkPaid, faultpoint.BeforeAck, "payment.before_gateway_call"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Parse(%q): error %q does not contain %q", spec, err, want)
			}
		}
	}
}

func TestParseArmsKnownPoints(t *testing.T) {
	t.Parallel()
	s, err := faultpoint.Parse(" order_paid.after_mark_paid=error:1 , payment.before_gateway_call=error", known, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Hit(faultpoint.AfterMarkPaid); !errors.Is(err, faultpoint.ErrInjected) {
		t.Errorf("first hit of %s: %v, want ErrInjected", faultpoint.AfterMarkPaid, err)
	}
	if err := s.Hit(faultpoint.AfterMarkPaid); err != nil {
		t.Errorf("second hit of %s (armed once): %v, want nil", faultpoint.AfterMarkPaid, err)
	}
	for range 3 {
		if err := s.Hit("payment.before_gateway_call"); !errors.Is(err, faultpoint.ErrInjected) {
			t.Errorf("hit of payment.before_gateway_call (armed for every hit): %v, want ErrInjected", err)
		}
	}
	if err := s.Hit(faultpoint.BeforeAck); err != nil {
		t.Errorf("hit of the unarmed %s: %v, want nil", faultpoint.BeforeAck, err)
	}
}

func TestParseRefusesBadModesAndCounts(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"order_paid.before_ack":           "want name=mode[:count]",
		"order_paid.before_ack=explode":   "mode must be error or crash",
		"order_paid.before_ack=error:0":   "count must be a positive integer",
		"order_paid.before_ack=error:one": "count must be a positive integer",
	} {
		if _, err := faultpoint.Parse(spec, known, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): err = %v, want one containing %q", spec, err, want)
		}
	}
}
