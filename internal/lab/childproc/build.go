package childproc

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Build builds cmd/orderpaid-lab (the service with the lab: its levers,
// the fakes, `all`) into dir, for the tests that start it as a
// child process, and returns the binary's path. It runs the go command on
// PATH, or else the one of the toolchain that built the caller. The working
// directory must be inside the module, as a test's is.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "orderpaid-lab")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if out, err := exec.Command(goTool, "build", "-o", bin, "github.com/orderpaid/orderpaid/cmd/orderpaid-lab").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build orderpaid-lab: %w\n%s", err, out)
	}
	return bin, nil
}
