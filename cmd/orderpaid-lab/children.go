package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/orderpaid/orderpaid/internal/lab/kafkalab"
	"github.com/orderpaid/orderpaid/internal/lab/scenario"
	"github.com/orderpaid/orderpaid/internal/platform/config"
)

// kafkaBrokersSet is KAFKA_BROKERS as given, "" when it is not set: the
// soak and the bench then start an in-process Kafka cluster
// (internal/lab/kafkalab) instead of trying config.DefaultKafkaBrokers.
func kafkaBrokersSet(cfg config.Config) string {
	if !cfg.KafkaBrokersSet {
		return ""
	}
	return strings.Join(cfg.KafkaBrokers, ",")
}

// inProcessKafka starts an in-process Kafka cluster for a run of name on
// the kafka broker when KAFKA_BROKERS is not set, points the children at it
// and says so ("the scenarios run on ..."); stop ends it. Otherwise it does
// nothing.
func inProcessKafka(e env, name, what string, runCfg scenario.Config) (stop func(), err error) {
	if runCfg.Broker != config.BrokerKafka || runCfg.Env["KAFKA_BROKERS"] != "" {
		return func() {}, nil
	}
	cluster, err := kafkalab.Start()
	if err != nil {
		return nil, err
	}
	runCfg.Env["KAFKA_BROKERS"] = cluster.Brokers()
	fmt.Fprintf(e.Stderr, "%s: KAFKA_BROKERS is not set: %s run on an in-process Kafka cluster at %s (franz-go's kfake, gone when this command ends); set KAFKA_BROKERS to run them on a real one\n", name, what, cluster.Brokers())
	return cluster.Close, nil
}

// processes is what the soak and the bench (name) start their processes
// from: this binary, and the directory for their logs, logDir or else a new
// temporary one.
func processes(name, logDir string) (bin, dir string, err error) {
	if bin, err = os.Executable(); err != nil {
		return "", "", fmt.Errorf("%s: find the orderpaid-lab binary to start: %w", name, err)
	}
	if logDir == "" {
		if logDir, err = os.MkdirTemp("", "orderpaid-"+name+"-"); err != nil {
			return "", "", fmt.Errorf("%s: create a log directory (set --logs): %w", name, err)
		}
	}
	return bin, logDir, nil
}
