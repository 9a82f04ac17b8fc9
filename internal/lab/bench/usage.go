package bench

import (
	"time"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// Usage is one process's (or process group's) share of a run.
type Usage struct {
	// Name is api, worker1, fakes, postgres, the broker's name or bench
	// (the load generator itself; bench+kafka when the in-process Kafka
	// cluster runs inside it).
	Name string
	// CPU is the CPU time used during the run.
	CPU time.Duration
	// Core is CPU divided by the run's wall time: 1.0 is one core busy.
	Core float64
	// PeakRSSKB is VmHWM, the process's peak resident set (0 for groups).
	PeakRSSKB int64
}

// usageSnapshot is CPU times at one moment, by name.
type usageSnapshot struct {
	cpu  map[string]time.Duration
	peak map[string]int64
	// names keeps the order of the report.
	names []string
}

// brokerProcess names the broker's server process, for its CPU time.
var brokerProcess = map[string]string{config.BrokerAMQP: "beam.smp", config.BrokerNATS: "nats-server"}

// takeUsage reads the CPU time of each process of the stack, of the
// PostgreSQL server, of the broker and of the load generator.
func takeUsage(s *Stack, cfg Config) usageSnapshot {
	u := usageSnapshot{cpu: map[string]time.Duration{}, peak: map[string]int64{}}
	add := func(name string, cpu time.Duration, peak int64) {
		u.names = append(u.names, name)
		u.cpu[name], u.peak[name] = cpu, peak
	}
	for _, p := range s.Procs() {
		cpu, peak := p.Usage()
		add(p.Name, cpu, peak)
	}
	add("postgres", groupCPU("postgres"), 0)
	if name, ok := brokerProcess[cfg.Broker]; ok {
		add(cfg.Broker, groupCPU(name), 0)
	}
	self := "bench"
	if cfg.kafkaInProcess {
		self = "bench+kafka"
	}
	add(self, selfCPU(), 0)
	return u
}

// usageBetween is what each process used between two snapshots.
func usageBetween(before, after usageSnapshot, wall time.Duration) []Usage {
	out := make([]Usage, 0, len(after.names))
	for _, name := range after.names {
		cpu := after.cpu[name] - before.cpu[name]
		out = append(out, Usage{Name: name, CPU: cpu, Core: cpu.Seconds() / wall.Seconds(), PeakRSSKB: after.peak[name]})
	}
	return out
}
