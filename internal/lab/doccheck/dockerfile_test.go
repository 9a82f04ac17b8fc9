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

func TestDockerfile(t *testing.T) {
	stages := readDockerfile(t)
	final := stages[len(stages)-1]

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

	t.Run("static binary: CGO_ENABLED=0", func(t *testing.T) {
		static := false
		for _, s := range stages {
			env := slices.ContainsFunc(s.args("ENV"), func(a string) bool { return strings.Contains(a, "CGO_ENABLED=0") })
			for _, run := range s.args("RUN") {
				if strings.Contains(run, "go build") {
					static = env || strings.Contains(run, "CGO_ENABLED=0")
				}
			}
		}
		if !static {
			t.Error("go build does not run with CGO_ENABLED=0: the binary may need libc, which small images lack")
		}
	})

	t.Run("runs as a non-root user", func(t *testing.T) {
		users := final.args("USER")
		if len(users) == 0 {
			t.Fatal("the final stage sets no USER: the container would run as root")
		}
		user, _, _ := strings.Cut(users[len(users)-1], ":")
		if user == "root" || user == "0" {
			t.Errorf("USER %s is root", users[len(users)-1])
		}
	})

	t.Run("entrypoint is orderpaid and its ports are exposed", func(t *testing.T) {
		if eps := final.args("ENTRYPOINT"); len(eps) == 0 || eps[len(eps)-1] != `["orderpaid"]` {
			t.Errorf(`ENTRYPOINT %v, want ["orderpaid"] (compose passes the subcommand as the command)`, eps)
		}
		cfg, err := config.Load(func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		var exposed []string
		for _, a := range final.args("EXPOSE") {
			exposed = append(exposed, strings.Fields(a)...)
		}
		for _, addr := range []string{cfg.HTTPAddr, cfg.FakesAddr} {
			if _, port, _ := net.SplitHostPort(addr); !slices.Contains(exposed, port) {
				t.Errorf("EXPOSE %v lacks %s, the default of %s", exposed, port, addr)
			}
		}
	})
}

// TestDockerignoreKeepsTheBuildInputs checks that no .dockerignore pattern
// drops what `go build ./cmd/orderpaid` needs (sql/migrations is embedded).
func TestDockerignoreKeepsTheBuildInputs(t *testing.T) {
	patterns := readLines(t, ".dockerignore")
	if !slices.Contains(patterns, ".git") {
		t.Error(".dockerignore does not exclude .git")
	}
	for _, need := range []string{"go.mod", "go.sum", "cmd", "cmd/orderpaid", "internal", "sql", "sql/migrations", "sql/migrations/embed.go"} {
		for _, p := range patterns {
			if ok, _ := path.Match(strings.TrimPrefix(p, "/"), need); ok {
				t.Errorf(".dockerignore pattern %q excludes %s, which the build needs", p, need)
			}
		}
	}
}
