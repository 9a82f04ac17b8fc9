package doccheck_test

import (
	"os"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// The README's table of environment variables, and its twin's in
// README.pt-BR.md, names every variable the code reads, so a new one cannot
// go undocumented in either language.
func TestREADMEListsEveryVariable(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"README.md", "README.pt-BR.md"} {
		readme, err := os.ReadFile("../../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range config.Variables {
			if !strings.Contains(string(readme), "| `"+v+"` |") {
				t.Errorf("%s has no row for %s in its table of environment variables", name, v)
			}
		}
	}
}
