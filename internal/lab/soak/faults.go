package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/lab/bench"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
)

// Fault is one fault injected, for the report.
type Fault struct {
	// At is the time since the load started.
	At time.Duration
	// What happened, e.g. "SIGKILL worker3".
	What string
	// Err is set when the fault could not be injected or the process did
	// not behave (a graceful stop that was not graceful).
	Err error
}

// injector injects faults into a running stack until its context ends.
type injector struct {
	stack *bench.Stack
	cfg   Config
	start time.Time
	// own is the broker the soak started for itself, if any; prefix the
	// run's BROKER_PREFIX.
	own    ownBroker
	prefix string
	logger func(format string, args ...any)

	mu     sync.Mutex
	faults []Fault
}

// record notes a fault that began at began.
func (in *injector) record(what string, began time.Time, err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.faults = append(in.faults, Fault{At: began.Sub(in.start), What: what, Err: err})
	if err != nil {
		in.logger("fault %s: %v", what, err)
	} else {
		in.logger("fault %s", what)
	}
}

// Faults returns the faults injected so far.
func (in *injector) Faults() []Fault {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Fault(nil), in.faults...)
}

// run kills and restarts workers on their timers until ctx ends. Alongside,
// it restarts the broker once at two fifths of the load's expected duration
// and PostgreSQL once at three fifths; each happens exactly once, early if
// the load ends first, so that the flow also settles across them.
func (in *injector) run(ctx context.Context, expected time.Duration) {
	var wg sync.WaitGroup
	wg.Go(func() {
		pause(ctx, expected*2/5)
		in.restartBroker(ctx)
		if in.cfg.RestartPostgres {
			pause(ctx, expected/5)
			began := time.Now()
			in.record("PostgreSQL restart", began, toTheEnd(ctx, func(ctx context.Context) error {
				return restartPostgres(ctx, in.cfg.postgresAddr())
			}))
		}
	})
	kill := time.NewTicker(in.cfg.KillEvery)
	defer kill.Stop()
	restart := time.NewTicker(in.cfg.RestartEvery)
	defer restart.Stop()
	for ctx.Err() == nil {
		// A restart that is due goes first: a kill can wait long for stable
		// groups (Kafka), and a random pick between two ready tickers could
		// leave a short load without any graceful restart.
		select {
		case <-restart.C:
			in.restartWorker(ctx)
			continue
		default:
		}
		select {
		case <-ctx.Done():
		case <-kill.C:
			in.killWorker(ctx)
		case <-restart.C:
			in.restartWorker(ctx)
		}
	}
	wg.Wait()
}

// pause waits d, or less if ctx ends first.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// running returns the workers still running.
func (in *injector) running() []*bench.Proc {
	var out []*bench.Proc
	for _, w := range in.stack.Workers() {
		if !w.Exited() {
			out = append(out, w)
		}
	}
	return out
}

// killWorker SIGKILLs a random worker and starts another in its place.
// On the in-process Kafka cluster it first waits until no member is in its
// first JoinGroup (kafkaGroupsStable), or skips the kill.
func (in *injector) killWorker(ctx context.Context) {
	ws := in.running()
	if len(ws) == 0 {
		return
	}
	if err := in.kafkaGroupsStable(ctx, len(ws)); err != nil {
		if ctx.Err() == nil {
			in.record("SIGKILL skipped", time.Now(), err)
		}
		return
	}
	w := ws[rand.IntN(len(ws))]
	began := time.Now()
	in.record("SIGKILL "+w.Name, began, w.Kill())
	in.replace(ctx)
}

// kafkaGroupsStable waits, on the in-process Kafka cluster only, until
// every consumer group of the run is stable with one member per running
// worker: kfake never expires a member killed in its first JoinGroup
// (internal/lab/kafkalab/groups.go). Every kill then still lands in the
// middle of the flow, with messages in hand and offsets not committed. A
// real cluster expires such a member after its session, so the soak does
// not wait there. It waits at most a rebalance timeout and a session.
func (in *injector) kafkaGroupsStable(ctx context.Context, workers int) error {
	if in.own.kafka == nil {
		return nil
	}
	var groups []string
	for _, s := range consumer.Subscriptions() {
		groups = append(groups, broker.KafkaGroup(in.prefix+s.Topic, s.Group))
	}
	return in.own.kafka.WaitGroupsStable(ctx, groups, workers, time.Minute)
}

// restartWorker stops a random worker with SIGTERM (its relay and
// consumers drain what they have in hand), after starting its replacement,
// as a rolling deploy does.
func (in *injector) restartWorker(ctx context.Context) {
	ws := in.running()
	if len(ws) == 0 {
		return
	}
	w := ws[rand.IntN(len(ws))]
	began := time.Now()
	if next, err := in.stack.StartWorker(context.WithoutCancel(ctx)); err != nil {
		in.logger("the replacement of %s did not start: %v", w.Name, err)
	} else {
		in.logger("started %s", next.Name)
	}
	in.record("SIGTERM "+w.Name+" (relay and consumers restart)", began, w.Stop(30*time.Second))
	in.replace(ctx)
}

// replace starts workers until cfg.Workers run. A worker cannot start
// while PostgreSQL is down (it checks the database first and exits), so a
// failed start is retried every second for a minute, as an orchestrator
// would, before it counts as a failed fault.
func (in *injector) replace(ctx context.Context) {
	deadline := time.Now().Add(time.Minute)
	for len(in.running()) < in.cfg.Workers {
		w, err := in.stack.StartWorker(context.WithoutCancel(ctx))
		if err == nil {
			in.logger("started %s", w.Name)
			continue
		}
		if time.Now().After(deadline) {
			in.record("start a worker", time.Now(), err)
			return
		}
		in.logger("a new worker did not start (retrying in 1s): %v", err)
		time.Sleep(time.Second)
	}
}

// restartBroker restarts the broker once: the private nats-server, or
// RabbitMQ's app when cfg.RestartRabbitMQ. On the postgres broker the
// broker is the database: its restart is the PostgreSQL restart. Kafka is
// not restarted: the in-process cluster would come back empty, and a real
// one is not the soak's to stop.
func (in *injector) restartBroker(ctx context.Context) {
	began := time.Now()
	switch {
	case in.own.nats != nil:
		in.record("nats-server restart (SIGKILL, 2s down)", began, toTheEnd(ctx, func(ctx context.Context) error { return in.own.nats.restart(ctx, 2*time.Second) }))
	case in.cfg.RestartRabbitMQ:
		in.record("RabbitMQ restart (stop_app, 2s, start_app)", began, toTheEnd(ctx, func(ctx context.Context) error { return restartRabbitMQ(ctx, 2*time.Second) }))
	}
}

// summary counts the faults by kind for the report.
func summary(faults []Fault) string {
	var kills, restarts, broker, postgres, failed int
	for _, f := range faults {
		switch {
		case f.Err != nil:
			failed++
		case strings.HasPrefix(f.What, "SIGKILL"):
			kills++
		case strings.HasPrefix(f.What, "SIGTERM"):
			restarts++
		case strings.HasPrefix(f.What, "PostgreSQL"):
			postgres++
		default:
			broker++
		}
	}
	return fmt.Sprintf("%d worker SIGKILLs, %d graceful worker restarts (relay included), %d broker restart, %d PostgreSQL restart, %d failed",
		kills, restarts, broker, postgres, failed)
}

// toTheEnd runs a server restart: once begun it runs to the end, even when
// the load finishes meanwhile (killing pg_ctlcluster or rabbitmqctl half
// way could leave the server stopped), bounded by two minutes.
func toTheEnd(ctx context.Context, restart func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	return restart(ctx)
}
