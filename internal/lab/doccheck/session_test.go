package doccheck_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// session is one bash, the reader's terminal for one page: the commands of
// the page's blocks run in it one after another, so what one sets (a shell
// variable, an export, a server in the background) is there for the next.
// Its process group is killed when the test ends, servers included.
type session struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	work  string      // a temporary directory of its own ($WORK)
	subst [][2]string // what a page spells -> what this run uses instead
	dead  bool
}

// endMark ends each command's output; the number after it is its exit code.
const endMark = "\x1eEND "

// prelude makes `go run ./cmd/NAME` run the binary built from this tree (and
// say "exit status N" as go run does), and gives the setups their helpers.
const prelude = `go() {
  if [ "$1" != run ]; then command go "$@"; return; fi
  local bin="$ORDERPAID_BIN/$(basename "$2")"; shift 2
  if [ -n "$SERVER_PIDS" ]; then "$bin" "$@" & echo $! >>"$SERVER_PIDS"; wait $!; else "$bin" "$@"; fi
  local rc=$?
  [ $rc -eq 0 ] || echo "exit status $rc" >&2
  return $rc
}
stop_servers() { # the servers of earlier commands, stopped as a reader stops them
  [ -f "$WORK/servers" ] || return 0
  for pid in $(cat "$WORK/servers"); do kill $pid 2>/dev/null; while kill -0 $pid 2>/dev/null; do sleep 0.1; done; done
  rm -f "$WORK/servers"
}
wait_line() { # FILE TEXT: until FILE holds TEXT, 30s at most
  for _ in $(seq 1 300); do grep -qF "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "no \"$2\" in $1 after 30s:"; tail -20 "$1"; return 1
}
`

// startSession starts bash in dir with env.
func startSession(t *testing.T, dir string, env []string) *session {
	t.Helper()
	s := &session{t: t, work: t.TempDir(), lines: make(chan string, 1024)}
	s.cmd = exec.Command("bash", "--noprofile", "--norc")
	s.cmd.Dir = dir
	s.cmd.Env = append(env, "WORK="+s.work)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, w, err := os.Pipe() // standard output and error, one stream as in a terminal
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout, s.cmd.Stderr = w, w
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go func() {
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				s.lines <- strings.TrimSuffix(line, "\n")
			}
			if err != nil {
				close(s.lines)
				return
			}
		}
	}()
	t.Cleanup(s.stop)
	if _, _, err := s.run(prelude, 10*time.Second); err != nil {
		t.Fatalf("start bash: %v", err)
	}
	return s
}

// stop ends the session's processes: SIGTERM, then SIGKILL 5s later.
func (s *session) stop() {
	pgid := s.cmd.Process.Pid
	_ = s.stdin.Close()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
}

// run runs script (one command, or a setup's lines) and returns what it
// printed, standard output and error as one stream, and its exit code. A
// script still running after timeout ends the session.
func (s *session) run(script string, timeout time.Duration) (string, int, error) {
	if s.dead {
		return "", -1, fmt.Errorf("the session ended at an earlier command")
	}
	fmt.Fprintf(s.stdin, "{ %s\n} </dev/null; printf '\\n%s%%d\\n' $?\n", script, endMark)
	var out []string
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.dead = true
				return strings.Join(out, "\n"), -1, fmt.Errorf("bash exited")
			}
			if code, found := strings.CutPrefix(line, endMark); found {
				rc, _ := strconv.Atoi(code)
				return strings.TrimSuffix(strings.Join(out, "\n"), "\n"), rc, nil
			}
			out = append(out, line)
		case <-deadline:
			s.dead = true
			s.stop()
			return strings.Join(out, "\n"), -1, fmt.Errorf("still running after %s", timeout)
		}
	}
}

// serverCommand is a command that serves until stopped (or refuses to start):
// the session starts it in the background, as a reader starts it in a
// terminal of its own.
var serverCommand = regexp.MustCompile(`(^|\s)(go run \./cmd/)?(orderpaid-lab all|orderpaid api|orderpaid worker)$`)

// startServer stops the servers earlier commands started, starts line in
// the background and returns what it printed once done says its output is
// complete, or after 30s.
func (s *session) startServer(line string, done func(string) bool) (string, error) {
	s.t.Helper()
	log := filepath.Join(s.work, fmt.Sprintf("server%d.out", time.Now().UnixNano()))
	start := fmt.Sprintf("stop_servers; (SERVER_PIDS=$WORK/servers; { %s\n} </dev/null >%q 2>&1 &)", line, log)
	if _, _, err := s.run(start, 30*time.Second); err != nil {
		return "", err
	}
	var out []byte
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		out, _ = os.ReadFile(log)
		if done(string(out)) {
			break
		}
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// substitute is line with what the page spells replaced by what this run
// uses; unsubstitute is the other way, for the output.
func (s *session) substitute(line string) string {
	for _, p := range s.subst {
		line = strings.ReplaceAll(line, p[0], p[1])
	}
	return line
}

func (s *session) unsubstitute(text string) string {
	for _, p := range s.subst {
		text = strings.ReplaceAll(text, p[1], p[0])
	}
	return text
}

// learn adds page -> actual, unless page is known already.
func (s *session) learn(page, actual string) {
	if page == actual {
		return
	}
	for _, p := range s.subst {
		if p[0] == page || p[1] == actual {
			return
		}
	}
	s.subst = append(s.subst, [2]string{page, actual})
}
