package doccheck_test

// The Dockerfile cannot be built here (no Docker engine), so it is read as
// text: a small line parser, enough for the instructions it uses.

import (
	"bufio"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, USER, ...
	args string
}

// stage is one FROM and the instructions under it.
type stage struct {
	image, name string
	body        []instruction
}

func (s stage) args(cmd string) []string {
	var out []string
	for _, in := range s.body {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

// readLines returns the file's lines with comments and blank lines dropped and
// backslash continuations joined.
func readLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	var cont strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if more, ok := strings.CutSuffix(line, `\`); ok {
			cont.WriteString(more + " ")
			continue
		}
		lines = append(lines, cont.String()+line)
		cont.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// readDockerfile parses ../../Dockerfile into its stages.
func readDockerfile(t *testing.T) []stage {
	t.Helper()
	var stages []stage
	for _, line := range readLines(t, "Dockerfile") {
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{image: f[len(f)-1]}
			if len(f) >= 3 && strings.EqualFold(f[len(f)-2], "AS") {
				s = stage{image: f[len(f)-3], name: f[len(f)-1]}
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("Dockerfile: %s before the first FROM", in.cmd)
			}
			continue
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	if len(stages) == 0 {
		t.Fatal("Dockerfile has no FROM")
	}
	return stages
}

// goDirective returns go.mod's go version, e.g. "1.26.8".
func goDirective(t *testing.T) string {
	t.Helper()
	for _, line := range readLines(t, "go.mod") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("go.mod has no go directive")
	return ""
}

// majorMinor turns "1.26.8" or "1.26" or "1.26-alpine" into "1.26".
func majorMinor(v string) string {
	v, _, _ = strings.Cut(v, "-")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// The Dockerfile builds two images from one build stage: the default target,
// its last stage, is production's, orderpaid alone; the stage lab, before it,
// is orderpaid-lab's, for docker-compose.yml's fakes and scenario runner.
func TestDockerfile(t *testing.T) {
	stages := readDockerfile(t)
	final := stages[len(stages)-1]
	var lab *stage
	for i := range stages {
		if stages[i].name == "lab" {
			lab = &stages[i]
		}
	}

	t.Run("multi-stage, the runtime stage has no toolchain", func(t *testing.T) {
		if len(stages) < 2 {
			t.Fatalf("%d stage(s), want a build stage and a runtime stage", len(stages))
		}
		if strings.HasPrefix(final.image, "golang") {
			t.Errorf("the final stage is %s: the image would ship the Go toolchain", final.image)
		}
		if !slices.ContainsFunc(final.args("COPY"), func(a string) bool { return strings.HasPrefix(a, "--from=") }) {
			t.Error("the final stage copies nothing from an earlier stage")
		}
	})

	t.Run("builder Go matches go.mod", func(t *testing.T) {
		var builder *stage
		for i := range stages {
			if strings.HasPrefix(stages[i].image, "golang:") {
				builder = &stages[i]
			}
		}
		if builder == nil {
			t.Fatal("no golang:X.Y build stage")
		}
		_, tag, _ := strings.Cut(builder.image, ":")
		if got, want := majorMinor(tag), majorMinor(goDirective(t)); got != want {
			t.Errorf("builder %s has Go %s, go.mod says go %s", builder.image, got, want)
		}
	})

	t.Run("static binaries, both built: CGO_ENABLED=0", func(t *testing.T) {
		static, built := false, map[string]bool{}
		for _, s := range stages {
			env := slices.ContainsFunc(s.args("ENV"), func(a string) bool { return strings.Contains(a, "CGO_ENABLED=0") })
			for _, run := range s.args("RUN") {
				if strings.Contains(run, "go build") {
					static = env || strings.Contains(run, "CGO_ENABLED=0")
					for _, f := range strings.Fields(run) {
						built[strings.TrimPrefix(f, "./")] = true
					}
				}
			}
		}
		if !static {
			t.Error("go build does not run with CGO_ENABLED=0: the binary may need libc, which small images lack")
		}
		for _, pkg := range []string{"cmd/orderpaid", "cmd/orderpaid-lab"} {
			if !built[pkg] {
				t.Errorf("no go build of ./%s: the stages that copy its binary would fail", pkg)
			}
		}
	})

	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	_, apiPort, _ := net.SplitHostPort(cfg.HTTPAddr)
	_, fakesPort, _ := net.SplitHostPort(cfg.FakesAddr)

	t.Run("the default target is production's: orderpaid alone", func(t *testing.T) {
		checkRuntime(t, final, "orderpaid", []string{apiPort})
		for _, c := range final.args("COPY") {
			if strings.Contains(c, "orderpaid-lab") {
				t.Errorf("the final stage copies %q: the production image would carry the lab", c)
			}
		}
	})

	t.Run("the stage lab: orderpaid-lab, before the final stage", func(t *testing.T) {
		if lab == nil {
			t.Fatal("no stage named lab: docker-compose.yml builds orderpaid-lab:dev from it")
		}
		if lab == &stages[len(stages)-1] {
			t.Fatal("lab is the last stage: a plain docker build would make the lab's image, not production's")
		}
		checkRuntime(t, *lab, "orderpaid-lab", []string{apiPort, fakesPort})
		if got, want := lab.args("USER"), final.args("USER"); !slices.Equal(got, want) {
			t.Errorf("lab runs as USER %v, production as %v: want one user", got, want)
		}
	})
}

// checkRuntime checks a runtime stage: no toolchain, a non-root user, binary
// as its entrypoint (compose passes the subcommand as the command), copied
// from the build stage, and ports exposed.
func checkRuntime(t *testing.T, s stage, binary string, ports []string) {
	t.Helper()
	if strings.HasPrefix(s.image, "golang") {
		t.Errorf("the stage of %s is %s: the image would ship the Go toolchain", binary, s.image)
	}
	users := s.args("USER")
	if len(users) == 0 {
		t.Errorf("the stage of %s sets no USER: the container would run as root", binary)
	} else if user, _, _ := strings.Cut(users[len(users)-1], ":"); user == "root" || user == "0" {
		t.Errorf("the stage of %s: USER %s is root", binary, users[len(users)-1])
	}
	if eps := s.args("ENTRYPOINT"); len(eps) == 0 || eps[len(eps)-1] != `["`+binary+`"]` {
		t.Errorf(`the stage of %s: ENTRYPOINT %v, want ["%s"] (compose passes the subcommand as the command)`, binary, eps, binary)
	}
	if !slices.ContainsFunc(s.args("COPY"), func(a string) bool {
		f := strings.Fields(a)
		return strings.HasPrefix(a, "--from=") && len(f) >= 3 && path.Base(f[len(f)-2]) == binary
	}) {
		t.Errorf("the stage of %s does not copy %s from an earlier stage", binary, binary)
	}
	var exposed []string
	for _, a := range s.args("EXPOSE") {
		exposed = append(exposed, strings.Fields(a)...)
	}
	for _, port := range ports {
		if !slices.Contains(exposed, port) {
			t.Errorf("the stage of %s: EXPOSE %v lacks %s", binary, exposed, port)
		}
	}
}

// TestDockerignoreKeepsTheBuildInputs checks that no .dockerignore pattern
// drops what `go build ./cmd/orderpaid ./cmd/orderpaid-lab` needs
// (sql/migrations is embedded).
func TestDockerignoreKeepsTheBuildInputs(t *testing.T) {
	patterns := readLines(t, ".dockerignore")
	if !slices.Contains(patterns, ".git") {
		t.Error(".dockerignore does not exclude .git")
	}
	for _, need := range []string{"go.mod", "go.sum", "cmd", "cmd/orderpaid", "cmd/orderpaid-lab", "internal", "internal/app", "sql", "sql/migrations", "sql/migrations/embed.go"} {
		for _, p := range patterns {
			if ok, _ := path.Match(strings.TrimPrefix(p, "/"), need); ok {
				t.Errorf(".dockerignore pattern %q excludes %s, which the build needs", p, need)
			}
		}
	}
}
