package main

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"testing"
	"time"
)

// brokers are the brokers every integration test runs against.
var brokers = []struct {
	name, addr, start string
}{
	{"postgres", "127.0.0.1:5432", "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"},
	{"amqp", "127.0.0.1:5672", "rabbitmq-server -detached"},
	{"nats", "127.0.0.1:4222", "start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log"},
}

// brokerEnv returns the environment that selects broker name for one test,
// with a topic prefix of its own so parallel tests sharing RabbitMQ or NATS
// never consume each other's messages. In CI a broker that is down fails the
// test; elsewhere the test is skipped with the command that starts it.
func brokerEnv(t *testing.T, name string) map[string]string {
	t.Helper()
	for _, b := range brokers {
		if b.name != name {
			continue
		}
		conn, err := net.DialTimeout("tcp", b.addr, 2*time.Second)
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("broker %s is required in CI and is down at %s: %v", name, b.addr, err)
			}
			t.Skipf("broker %s is down at %s; start it with: %s", name, b.addr, b.start)
		}
		conn.Close()
		suffix := make([]byte, 4)
		_, _ = rand.Read(suffix)
		return map[string]string{
			"BROKER": name, "BROKER_PREFIX": "t" + hex.EncodeToString(suffix) + "_",
			"AMQP_URL": "amqp://guest:guest@127.0.0.1:5672/", "NATS_URL": "nats://127.0.0.1:4222",
		}
	}
	t.Fatalf("unknown broker %q", name)
	return nil
}

// merge returns the union of maps, later ones winning.
func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
