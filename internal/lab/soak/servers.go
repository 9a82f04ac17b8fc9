package soak

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
)

// natsServer is a private nats-server with JetStream, started for one soak:
// stopping it disturbs no other user of NATS.
type natsServer struct {
	bin, addr, dir string
	cmd            *exec.Cmd
	logFile        *os.File
}

// startNATS starts nats-server (bin) on a free port with its store in dir.
func startNATS(ctx context.Context, bin, dir string) (*natsServer, error) {
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("nats-server"); err != nil {
			bin = "/usr/sbin/nats-server"
		}
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("nats-server not found at %s (install it, or run the soak with --broker postgres): %w", bin, err)
	}
	addr, err := childproc.FreeAddr()
	if err != nil {
		return nil, fmt.Errorf("nats-server: %w", err)
	}
	s := &natsServer{bin: bin, addr: addr, dir: dir}
	return s, s.start(ctx)
}

// URL is the server's nats:// URL.
func (s *natsServer) URL() string { return "nats://" + s.addr }

func (s *natsServer) start(ctx context.Context) error {
	host, port, _ := net.SplitHostPort(s.addr)
	var err error
	if s.logFile, err = os.OpenFile(filepath.Join(s.dir, "nats-server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return err
	}
	s.cmd = exec.Command(s.bin, "-a", host, "-p", port, "-js", "-sd", filepath.Join(s.dir, "jetstream"))
	s.cmd.Stdout, s.cmd.Stderr = s.logFile, s.logFile
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start nats-server: %w", err)
	}
	return waitDialable(ctx, s.addr, 20*time.Second, "nats-server")
}

// restart stops the server (SIGKILL: as abrupt as a crash), waits pause,
// and starts it again on the same port and store.
func (s *natsServer) restart(ctx context.Context, pause time.Duration) error {
	s.stop()
	time.Sleep(pause)
	return s.start(ctx)
}

func (s *natsServer) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	if s.logFile != nil {
		s.logFile.Close()
	}
}

// restartPostgres restarts the local PostgreSQL cluster, as the README
// starts it, and waits until addr accepts connections again. Every
// connection of every user of the server breaks.
func restartPostgres(ctx context.Context, addr string) error {
	versions, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(versions) == 0 {
		return fmt.Errorf("find the local PostgreSQL cluster in /etc/postgresql (restart it by hand, or run without the PostgreSQL restart): %v", err)
	}
	out, err := exec.CommandContext(ctx, "pg_ctlcluster", "--skip-systemctl-redirect", versions[0].Name(), "main", "restart").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctlcluster %s main restart: %v: %s", versions[0].Name(), err, strings.TrimSpace(string(out)))
	}
	return waitDialable(ctx, addr, 60*time.Second, "PostgreSQL")
}

// restartRabbitMQ stops and starts the RabbitMQ application of the local
// node (every user of RabbitMQ is disturbed).
func restartRabbitMQ(ctx context.Context, pause time.Duration) error {
	for _, args := range [][]string{{"stop_app"}, nil, {"start_app"}, {"await_startup"}} {
		if args == nil {
			time.Sleep(pause)
			continue
		}
		if out, err := exec.CommandContext(ctx, "rabbitmqctl", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("rabbitmqctl %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

func waitDialable(ctx context.Context, addr string, timeout time.Duration, what string) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not listening on %s within %s", what, addr, timeout)
}
