package config_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/platform/config"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string // a substring naming the variable; "" for success
	}{
		{"defaults", nil, ""},
		{"every broker", map[string]string{"BROKER": "nats", "BROKER_PREFIX": "t_1"}, ""},
		{"kafka", map[string]string{"BROKER": "kafka", "KAFKA_BROKERS": "k1:9092,k2:9093"}, ""},
		{"unknown broker", map[string]string{"BROKER": "sqs"}, "BROKER"},
		{"bad prefix", map[string]string{"BROKER_PREFIX": "Has.Dots"}, "BROKER_PREFIX"},
		{"bad URL", map[string]string{"FAKES_URL": "localhost"}, "FAKES_URL"},
		{"bad duration", map[string]string{"SHUTDOWN_TIMEOUT": "soon"}, "SHUTDOWN_TIMEOUT"},
		{"dev run", map[string]string{"ORDERPAID_DEV": "1"}, ""},
		{"bad dev value", map[string]string{"ORDERPAID_DEV": "yes"}, "ORDERPAID_DEV"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load(func(k string) string { return tt.env[k] })
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if cfg.HTTPAddr == "" || cfg.Dev != (tt.env["ORDERPAID_DEV"] == "1") {
					t.Errorf("defaults not applied: %+v", cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Load error = %v, want one naming %s", err, tt.wantErr)
			}
		})
	}
}

// KAFKA_BROKERS is a comma list of host:port, localhost:9092 unless set;
// anything else is refused naming the variable and the entry at fault.
func TestKafkaBrokers(t *testing.T) {
	for _, tt := range []struct {
		value   string
		want    []string
		wantSet bool
		wantErr string
	}{
		{"", []string{"localhost:9092"}, false, ""},
		{"kafka:9092", []string{"kafka:9092"}, true, ""},
		{"k1:9092, k2:19092 ,127.0.0.1:9094", []string{"k1:9092", "k2:19092", "127.0.0.1:9094"}, true, ""},
		{"[::1]:9092", []string{"[::1]:9092"}, true, ""},
		{"kafka", nil, false, `"kafka" is not host:port`},
		{"k1:9092,", nil, false, `"" is not host:port`},
		{":9092", nil, false, `":9092" is not host:port`},
		{"k1:port", nil, false, `"k1:port" is not host:port`},
		{"kafka://k1:9092", nil, false, "is not host:port"},
	} {
		t.Run(tt.value, func(t *testing.T) {
			cfg, err := config.Load(func(k string) string { return map[string]string{"KAFKA_BROKERS": tt.value}[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), "KAFKA_BROKERS") || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want one naming KAFKA_BROKERS and %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.KafkaBrokers, tt.want) || cfg.KafkaBrokersSet != tt.wantSet {
				t.Errorf("KafkaBrokers %q (set %v), want %q (set %v)", cfg.KafkaBrokers, cfg.KafkaBrokersSet, tt.want, tt.wantSet)
			}
		})
	}
}

// A dev run listens on loopback only unless HTTP_ADDR or FAKES_ADDR says
// otherwise: on every interface, anyone on the same network could forge a
// payment with the documented dev secret or pull the lab's levers. The
// fakes stand in for providers in every run, and listen on loopback too. A
// production api listens on every interface, as the contract says.
func TestListenAddresses(t *testing.T) {
	for _, tt := range []struct {
		name             string
		env              map[string]string
		devRun           bool // as `orderpaid-lab all`: ForDevRun without ORDERPAID_DEV
		wantAPI, wantFks string
	}{
		{"production", nil, false, ":8080", "127.0.0.1:8081"},
		{"ORDERPAID_DEV=1", map[string]string{"ORDERPAID_DEV": "1"}, false, "127.0.0.1:8080", "127.0.0.1:8081"},
		{"orderpaid-lab all", nil, true, "127.0.0.1:8080", "127.0.0.1:8081"},
		{"a dev run told otherwise", map[string]string{"ORDERPAID_DEV": "1", "HTTP_ADDR": "0.0.0.0:8080", "FAKES_ADDR": "0.0.0.0:8081"}, true,
			"0.0.0.0:8080", "0.0.0.0:8081"},
		{"orderpaid-lab all on a port of its own", map[string]string{"HTTP_ADDR": "127.0.0.1:18080"}, true, "127.0.0.1:18080", "127.0.0.1:8081"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if tt.devRun {
				cfg = cfg.ForDevRun()
			}
			if cfg.HTTPAddr != tt.wantAPI || cfg.FakesAddr != tt.wantFks {
				t.Errorf("HTTP_ADDR %q, FAKES_ADDR %q; want %q, %q", cfg.HTTPAddr, cfg.FakesAddr, tt.wantAPI, tt.wantFks)
			}
		})
	}
}

// CONSUMER_BATCH_SIZE is 1 unless set, and 1..1000 when set; anything else
// is refused with an error naming the variable and the range.
func TestConsumerBatchSize(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  int // 0: refused
	}{
		{"", 1}, {"1", 1}, {"100", 100}, {"1000", 1000},
		{"0", 0}, {"-5", 0}, {"1001", 0}, {"ten", 0}, {"2.5", 0}, {" 10", 0},
	} {
		t.Run("value "+strconv.Quote(tt.value), func(t *testing.T) {
			cfg, err := config.Load(func(k string) string {
				if k == "CONSUMER_BATCH_SIZE" {
					return tt.value
				}
				return ""
			})
			if tt.want == 0 {
				if err == nil || !strings.Contains(err.Error(), "CONSUMER_BATCH_SIZE") || !strings.Contains(err.Error(), "1 to 1000") {
					t.Fatalf("Load error = %v, want one naming CONSUMER_BATCH_SIZE and the range 1 to 1000", err)
				}
				return
			}
			if err != nil || cfg.ConsumerBatchSize != tt.want {
				t.Fatalf("ConsumerBatchSize = %d, %v; want %d", cfg.ConsumerBatchSize, err, tt.want)
			}
		})
	}
}

func TestWebhookSecretFor(t *testing.T) {
	const own = "whsec_0123456789abcdef0123456789abcdef"
	for _, tt := range []struct {
		secret, dev string
		devRun      bool
		want, kind  string // want: the secret, or "" when refused
	}{
		{own, "", false, own, config.SecretConfigured},
		{own, "1", true, own, config.SecretConfigured},
		{"", "", false, "", ""},
		{config.DevWebhookSecret, "", false, "", ""},
		{"", "1", false, config.DevWebhookSecret, config.SecretDev},
		{config.DevWebhookSecret, "", true, config.DevWebhookSecret, config.SecretDev},
	} {
		cfg, err := config.Load(func(k string) string {
			return map[string]string{"WEBHOOK_SECRET": tt.secret, "ORDERPAID_DEV": tt.dev}[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		secret, kind, err := cfg.WebhookSecretFor(tt.devRun)
		if tt.want == "" {
			if err == nil || !strings.Contains(err.Error(), "WEBHOOK_SECRET") {
				t.Errorf("secret %q, dev %q, devRun %v: err = %v, want a refusal naming WEBHOOK_SECRET", tt.secret, tt.dev, tt.devRun, err)
			}
			continue
		}
		if err != nil || string(secret) != tt.want || kind != tt.kind {
			t.Errorf("secret %q, dev %q, devRun %v: got %q %q %v, want %q %q", tt.secret, tt.dev, tt.devRun, secret, kind, err, tt.want, tt.kind)
		}
	}
}

// A secret that can be guessed is refused in every run, dev or not: one
// shorter than 32 bytes, and one holding whitespace (the dev secret with a
// trailing newline would otherwise pass as a secret of the deployment's
// own). The refusal names the variable and what is wrong with it.
func TestWebhookSecretRefusesGuessableSecrets(t *testing.T) {
	own32 := strings.Repeat("k", config.MinWebhookSecretBytes)
	for _, tt := range []struct {
		name, secret, says string
	}{
		{"one byte", "x", "too short"},
		{"one byte short", own32[1:], "too short"},
		{"the dev secret and a newline", config.DevWebhookSecret + "\n", "whitespace"},
		{"a leading space", " " + own32, "whitespace"},
		{"a space inside", own32[:10] + " " + own32[10:], "whitespace"},
		{"a tab", own32 + "\t", "whitespace"},
		{"a CRLF", own32 + "\r\n", "whitespace"},
	} {
		for _, devRun := range []bool{false, true} {
			cfg, err := config.Load(func(k string) string { return map[string]string{"WEBHOOK_SECRET": tt.secret}[k] })
			if err != nil {
				t.Fatal(err)
			}
			secret, _, err := cfg.WebhookSecretFor(devRun)
			if err == nil || !strings.Contains(err.Error(), "WEBHOOK_SECRET") || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("%s, dev run %v: secret %q, err %v; want a refusal naming WEBHOOK_SECRET and saying %q", tt.name, devRun, secret, err, tt.says)
			}
		}
	}
	cfg, _ := config.Load(func(k string) string { return map[string]string{"WEBHOOK_SECRET": own32}[k] })
	if secret, kind, err := cfg.WebhookSecretFor(false); err != nil || string(secret) != own32 || kind != config.SecretConfigured {
		t.Errorf("a 32-byte secret: %q %q %v, want it accepted", secret, kind, err)
	}
}

// CONSUMER_POSITION is separate unless set; with-effects only with the
// postgres broker or Kafka in batch mode, and every refusal says what to set.
func TestConsumerPosition(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string // "": refused
		says string // part of the refusal
	}{
		{map[string]string{}, config.PositionSeparate, ""},
		{map[string]string{"CONSUMER_POSITION": "separate", "BROKER": "amqp"}, config.PositionSeparate, ""},
		{map[string]string{"CONSUMER_POSITION": "with-effects", "CONSUMER_BATCH_SIZE": "100"}, config.PositionWithEffects, ""},
		{map[string]string{"CONSUMER_POSITION": "with-effects", "CONSUMER_BATCH_SIZE": "100", "BROKER": "kafka"}, config.PositionWithEffects, ""},
		{map[string]string{"CONSUMER_POSITION": "with-effects", "CONSUMER_BATCH_SIZE": "100", "BROKER": "nats"}, "", "needs BROKER=postgres or BROKER=kafka"},
		{map[string]string{"CONSUMER_POSITION": "with-effects"}, "", "needs CONSUMER_BATCH_SIZE above 1"},
		{map[string]string{"CONSUMER_POSITION": "in-tx"}, "", "want separate (the default) or with-effects"},
	} {
		t.Run(fmt.Sprint(tt.env), func(t *testing.T) {
			cfg, err := config.Load(func(k string) string { return tt.env[k] })
			if tt.want == "" {
				if err == nil || !strings.Contains(err.Error(), "CONSUMER_POSITION") || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("Load error = %v, want one naming CONSUMER_POSITION and saying %q", err, tt.says)
				}
				return
			}
			if err != nil || cfg.ConsumerPosition != tt.want {
				t.Fatalf("ConsumerPosition = %q, %v; want %q", cfg.ConsumerPosition, err, tt.want)
			}
		})
	}
}

// OUTBOX_RELAY is poll unless set; anything but poll or logical is refused,
// naming the variable and both values.
func TestOutboxRelay(t *testing.T) {
	for _, tt := range []struct{ value, want string }{
		{"", config.RelayPoll}, {"poll", config.RelayPoll}, {"logical", config.RelayLogical}, {"cdc", ""},
	} {
		cfg, err := config.Load(func(k string) string { return map[string]string{"OUTBOX_RELAY": tt.value}[k] })
		if tt.want == "" {
			if err == nil || !strings.Contains(err.Error(), `OUTBOX_RELAY="cdc"`) || !strings.Contains(err.Error(), "want poll") {
				t.Errorf("OUTBOX_RELAY=%s: Load error = %v, want one naming the variable and its values", tt.value, err)
			}
			continue
		}
		if err != nil || cfg.OutboxRelay != tt.want {
			t.Errorf("OUTBOX_RELAY=%q: OutboxRelay = %q, %v; want %q", tt.value, cfg.OutboxRelay, err, tt.want)
		}
	}
}

// PPROF_ADDR is off unless set, a port alone is on 127.0.0.1, and a host
// other than loopback is refused, naming the variable and saying why: the
// profiler has no authentication and a heap profile holds the secrets.
func TestProfilerAddrIsLoopbackOnly(t *testing.T) {
	for _, tt := range []struct{ value, want string }{
		{"", ""},
		{":6060", "127.0.0.1:6060"},
		{"127.0.0.1:6060", "127.0.0.1:6060"},
		{"localhost:6060", "localhost:6060"},
		{"[::1]:6060", "[::1]:6060"},
		{"0.0.0.0:6060", ""},
		{"[::]:6060", ""},
		{"10.0.0.5:6060", ""},
		{"db.internal:6060", ""},
		{"6060", ""},
	} {
		cfg, err := config.Load(func(k string) string { return map[string]string{"PPROF_ADDR": tt.value}[k] })
		if tt.want == "" && tt.value != "" {
			if err == nil || !strings.Contains(err.Error(), `PPROF_ADDR="`+tt.value+`"`) || !strings.Contains(err.Error(), "loopback") {
				t.Errorf("PPROF_ADDR=%s: Load error = %v, want one naming the variable and loopback", tt.value, err)
			}
			continue
		}
		if err != nil || cfg.ProfilerAddr != tt.want {
			t.Errorf("PPROF_ADDR=%q: ProfilerAddr = %q, %v; want %q", tt.value, cfg.ProfilerAddr, err, tt.want)
		}
	}
}
