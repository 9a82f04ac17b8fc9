package doccheck_test

import (
	"os"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// The README's table of environment variables names every variable the
// code reads, so a new one cannot go undocumented.
func TestREADMEListsEveryVariable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range config.Variables {
		if !strings.Contains(string(readme), "| `"+v+"` |") {
			t.Errorf("README.md has no row for %s in its table of environment variables", v)
		}
	}
}
