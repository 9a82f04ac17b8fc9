package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

// TestEndToEndOnKafka is TestEndToEnd on BROKER=kafka, message by message
// and in batch mode: one order paid, the webhook redelivered (three
// concurrent copies and a new event id), every effect once, one e-mail.
// It runs against an in-process Kafka-protocol cluster (kfake), or the
// cluster in TEST_KAFKA_BROKERS when set.
func TestEndToEndOnKafka(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{
		{"per message", nil},
		{"batch mode", map[string]string{"CONSUMER_BATCH_SIZE": "20"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testEndToEnd(t, merge(kafkaEnv(t), tt.env))
		})
	}
}

// kafkaEnv returns the environment that selects BROKER=kafka for one
// test, on a cluster of its own (or TEST_KAFKA_BROKERS, under a topic
// prefix of its own).
func kafkaEnv(t *testing.T) map[string]string {
	t.Helper()
	brokers := os.Getenv("TEST_KAFKA_BROKERS")
	if brokers == "" {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatalf("start an in-process Kafka cluster: %v", err)
		}
		t.Cleanup(c.Close)
		brokers = strings.Join(c.ListenAddrs(), ",")
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	return map[string]string{"BROKER": "kafka", "KAFKA_BROKERS": brokers, "BROKER_PREFIX": "t" + hex.EncodeToString(suffix) + "_"}
}

// TestDoctorPassesOnKafka is TestDoctorPasses on BROKER=kafka: the broker
// line names the cluster it reached.
func TestDoctorPassesOnKafka(t *testing.T) {
	t.Parallel()
	pgtest.NewDatabase(t) // skips without PostgreSQL
	env := merge(kafkaEnv(t), freePorts(t), map[string]string{"DATABASE_URL": pgtest.AdminURL()})
	report, err := doctor(t, env)
	if err != nil || strings.Contains(report, "FAIL") {
		t.Fatalf("doctor: %v\n%s", err, report)
	}
	if l := line(report, "broker"); !strings.HasPrefix(l, "ok") || !strings.Contains(l, "kafka: 1 broker(s)") || !strings.Contains(l, env["KAFKA_BROKERS"]) {
		t.Errorf("broker line %q, want ok naming kafka, its brokers and %s", l, env["KAFKA_BROKERS"])
	}
}
