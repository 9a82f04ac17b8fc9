package doccheck_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built is orderpaid and orderpaid-lab built from this tree, once for the
// package's tests that run them (TestTranscripts, TestStackBlocks), in a
// directory TestMain removes.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// buildBinaries returns the directory holding orderpaid and orderpaid-lab,
// built from the tree at root the first time a test asks.
func buildBinaries(t *testing.T, root string) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "orderpaid-doccheck-bin-"); built.err != nil {
			return
		}
		build := exec.Command("go", "build", "-o", built.dir+string(filepath.Separator), "./cmd/orderpaid", "./cmd/orderpaid-lab")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("build orderpaid and orderpaid-lab: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}
