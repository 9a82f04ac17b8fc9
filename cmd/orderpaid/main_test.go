package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/app"
)

// The production binary links nothing of the lab: no fakes, no switches
// that turn a guard off, no scenario, no in-process Kafka cluster.
func TestProductionLinksNoLab(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !strings.Contains(string(out), "github.com/orderpaid/orderpaid/internal/app") {
		t.Fatalf("go list -deps named %d packages, without internal/app: is the list read right?", len(deps))
	}
	for _, d := range deps {
		if strings.Contains(d, "/internal/lab") || strings.HasSuffix(d, "/kfake") {
			t.Errorf("orderpaid links %s: production must not carry the lab", d)
		}
	}
}

// orderpaid has the service's subcommands, each with -h; it refuses the
// lab's, and the lab's levers on its api and worker, as mistakes on the
// command line that say where they are.
func TestProductionHasNoLabCommandsOrLevers(t *testing.T) {
	t.Parallel()
	cmds := app.Production(nil)
	getenv := func(string) string { return "" }
	for name := range cmds {
		var out strings.Builder
		if err := app.Run(context.Background(), "orderpaid", cmds, []string{"orderpaid", name, "-h"}, getenv, &out, &out); err != nil ||
			!strings.Contains(out.String(), "usage: orderpaid "+name) {
			t.Errorf("%s -h: err=%v output=%q, want its usage", name, err, out.String())
		}
		if strings.Contains(out.String(), "-without") || strings.Contains(out.String(), "-faults") {
			t.Errorf("%s -h offers a lab lever: %q", name, out.String())
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"all"}, "orderpaid-lab"},
		{[]string{"scenario", "list"}, "orderpaid-lab"},
		{[]string{"worker", "--without", "inbox"}, "flag provided but not defined: -without"},
		{[]string{"api", "--faults", "payment.before_gateway_call=error"}, "flag provided but not defined: -faults"},
		{[]string{"reconcile", "--without", "webhook-inbox"}, "flag provided but not defined: -without"},
	} {
		var out strings.Builder
		err := app.Run(context.Background(), "orderpaid", cmds, append([]string{"orderpaid"}, tt.args...), getenv, &out, &out)
		var ue app.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("orderpaid %v: err = %v, want a usage error naming %q", tt.args, err, tt.want)
		}
	}
}
