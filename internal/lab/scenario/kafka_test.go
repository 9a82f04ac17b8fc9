package scenario_test

import (
	"os"
	"testing"

	"github.com/orderpaid/orderpaid/internal/lab/kafkalab"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/scenario"
)

// TestScenariosOnKafka runs on BROKER=kafka, per message and in batch mode
// (CONSUMER_BATCH_SIZE=20), the scenarios only Kafka has, protected and
// with each of their guards off, and the ones that kill or stop a worker
// (its partitions then move to the next member of the group, after the
// dead member's session), protected; and, with the position in the
// effects' transaction, the Kafka-only ones that read nothing again there. The cluster is franz-go's in-process
// one (kfake), or TEST_KAFKA_BROKERS when set. The whole catalogue on
// Kafka is `orderpaid-lab scenario run all --matrix --broker kafka`
// (docs/kafka.md).
func TestScenariosOnKafka(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	brokers := os.Getenv("TEST_KAFKA_BROKERS")
	if brokers == "" {
		cluster, err := kafkalab.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cluster.Close)
		brokers = cluster.Brokers()
	}
	byName := map[string]*scenario.Scenario{}
	var cases []scenario.Case
	for _, s := range scenario.Catalogue() {
		byName[s.Name] = s
		if s.Broker == "kafka" {
			cases = append(cases, scenario.Matrix([]*scenario.Scenario{s})...)
		}
	}
	if len(cases) == 0 {
		t.Fatal("no scenario runs on Kafka only")
	}
	for _, name := range []string{"worker-restart", "graceful-restart", "partial-failure"} {
		cases = append(cases, scenario.Case{Scenario: byName[name]})
	}
	for _, mode := range []struct {
		name string
		env  map[string]string
	}{
		{"per_message", map[string]string{"KAFKA_BROKERS": brokers}},
		{"batch", map[string]string{"KAFKA_BROKERS": brokers, "CONSUMER_BATCH_SIZE": "20"}},
	} {
		cfg := scenario.Config{Bin: bin, AdminURL: pgtest.AdminURL(), Broker: "kafka", Env: mode.env}
		run(t, mode.name, cfg, cases)
	}
	// With the position in the effects' transaction (the rows of
	// kafka_positions), the Kafka-only scenarios that read again from the
	// last committed offset read nothing again.
	var withEffects []scenario.Case
	for _, c := range cases {
		if c.Scenario.Broker == "kafka" && c.Scenario.WithEffects != nil && c.Without == "" {
			withEffects = append(withEffects, c)
		}
	}
	if len(withEffects) == 0 {
		t.Fatal("no Kafka-only scenario differs with the position in the effects' transaction")
	}
	run(t, "with_effects", scenario.Config{Bin: bin, AdminURL: pgtest.AdminURL(), Broker: "kafka",
		Env: map[string]string{"KAFKA_BROKERS": brokers, "CONSUMER_BATCH_SIZE": "20", "CONSUMER_POSITION": "with-effects"}}, withEffects)
}

// run runs each case under cfg as a parallel subtest of t named mode/NAME.
func run(t *testing.T, mode string, cfg scenario.Config, cases []scenario.Case) {
	t.Helper()
	for _, c := range cases {
		name := mode + "/" + c.Scenario.Name
		if c.Without != "" {
			name += "/without_" + c.Without
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runCase(t, cfg, c, t.Fatal)
		})
	}
}
