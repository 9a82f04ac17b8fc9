package outbox_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	amqp091 "github.com/rabbitmq/amqp091-go"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/lab/tempdb"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/postgres"
	"github.com/orderpaid/orderpaid/internal/telemetry"
)

const (
	traceAMQPURL = "amqp://guest:guest@127.0.0.1:5672/"
	traceNATSURL = "nats://127.0.0.1:4222"
)

// The W3C trace context written into the message's metadata by Publish must
// come out of every broker: the consumer's span continues the trace of the
// transaction that wrote the message, through the relay.
func TestTraceContextSurvivesEachBroker(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{config.BrokerPostgres, config.BrokerAMQP, config.BrokerNATS} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testTraceThroughBroker(t, kind)
		})
	}
}

func testTraceThroughBroker(t *testing.T, kind string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool, _ := pgtest.NewDatabase(t)
	requireBroker(t, kind)
	topic, group := "tracetest_"+tempdb.RandomHex(6), "tracetest"
	b, err := broker.New(ctx, config.Config{Broker: kind, AMQPURL: traceAMQPURL, NATSURL: traceNATSURL}, pool, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteTopology(t, kind, topic, group) })
	defer b.Close()
	if err := b.Provision(topic, group); err != nil {
		t.Fatal(err)
	}

	spans, reader := tracetest.NewInMemoryExporter(), sdkmetric.NewManualReader()
	tel, err := telemetry.New(telemetry.NewTracerProvider(sdktrace.WithSyncer(spans)), sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	system := telemetry.MessagingSystem(kind)
	relay, err := outbox.NewRelay(pool, b.Publisher, watermill.NopLogger{}, outbox.RelayConfig{
		PollInterval: 20 * time.Millisecond, TracerProvider: tel.TracerProvider, System: system, Metrics: tel.Metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	router.AddMiddleware(telemetry.ConsumerMiddleware(tel.TracerProvider, system))
	sub, err := b.Subscriber(group)
	if err != nil {
		t.Fatal(err)
	}
	consumed := make(chan trace.SpanContext, 1)
	router.AddConsumerHandler(group, topic, sub, func(msg *message.Message) error {
		consumed <- trace.SpanContextFromContext(msg.Context())
		return nil
	})
	done := make(chan struct{}, 2)
	go func() { _ = relay.Run(ctx); done <- struct{}{} }()
	go func() { _ = router.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()

	orderID := uuid.New()
	msg, err := messages.NewOrderConfirmed(orderID)
	if err != nil {
		t.Fatal(err)
	}
	txCtx, root := tel.TracerProvider.Tracer("test").Start(ctx, "business transaction")
	err = postgres.InTx(txCtx, pool, func(tx pgx.Tx) error { return outbox.Publish(txCtx, tx, topic, msg) })
	root.End()
	if err != nil {
		t.Fatal(err)
	}

	var got trace.SpanContext
	select {
	case got = <-consumed:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: message not consumed within 30s", kind)
	}
	if got.TraceID() != root.SpanContext().TraceID() {
		t.Fatalf("%s: consumer span in trace %s, want the writer's trace %s", kind, got.TraceID(), root.SpanContext().TraceID())
	}
	// The handler runs before its consumer span ends, and can run before the
	// relay's Publish returns (RabbitMQ delivers before it confirms): wait
	// for both spans to end.
	stubs := spans.GetSpans()
	for deadline := time.Now().Add(10 * time.Second); !ended(stubs, "relay "+topic, "process "+topic) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		stubs = spans.GetSpans()
	}
	chain := map[string]string{} // span name -> parent span name
	byID := map[trace.SpanID]string{}
	for _, s := range stubs {
		byID[s.SpanContext.SpanID()] = s.Name
	}
	for _, s := range stubs {
		chain[s.Name] = byID[s.Parent.SpanID()]
		if s.Name == "process "+topic {
			for _, a := range s.Attributes {
				if a.Key == telemetry.AttrOrderID && a.Value.AsString() != orderID.String() {
					t.Errorf("%s: consumer span order.id %q, want %s", kind, a.Value.AsString(), orderID)
				}
			}
		}
	}
	for child, parent := range map[string]string{
		"outbox_write " + topic: "business transaction",
		"relay " + topic:        "outbox_write " + topic,
		"process " + topic:      "relay " + topic,
	} {
		if chain[child] != parent {
			t.Errorf("%s: parent of %q is %q, want %q", kind, child, chain[child], parent)
		}
	}
	if n := histogramCount(t, reader, telemetry.MetricRelayLag); n != 1 {
		t.Errorf("%s: relay lag recorded %d time(s), want 1", kind, n)
	}
}

// ended reports whether every span named is among stubs.
func ended(stubs tracetest.SpanStubs, names ...string) bool {
	seen := map[string]bool{}
	for _, s := range stubs {
		seen[s.Name] = true
	}
	for _, n := range names {
		if !seen[n] {
			return false
		}
	}
	return true
}

// histogramCount is how many values a histogram has recorded.
func histogramCount(t *testing.T, reader *sdkmetric.ManualReader, name string) uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
				for _, dp := range h.DataPoints {
					n += dp.Count
				}
			}
		}
	}
	return n
}

// requireBroker skips the test when the broker is not listening, or fails it
// in CI, where every broker must be running.
func requireBroker(t *testing.T, kind string) {
	t.Helper()
	raw := map[string]string{config.BrokerAMQP: traceAMQPURL, config.BrokerNATS: traceNATSURL}[kind]
	if raw == "" {
		return // postgres: pgtest already checked
	}
	u, _ := url.Parse(raw)
	conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI and is down at %s: %v", kind, u.Host, err)
		}
		t.Skipf("%s is down at %s (scripts/services.sh starts it): %v", kind, u.Host, err)
	}
	conn.Close()
}

// deleteTopology removes what Provision created on RabbitMQ or NATS for the
// test's topic; postgres needs nothing (the database is dropped).
func deleteTopology(t *testing.T, kind, topic, group string) {
	switch kind {
	case config.BrokerAMQP:
		conn, err := amqp091.Dial(traceAMQPURL)
		if err != nil {
			t.Logf("delete RabbitMQ topology of %s: %v", topic, err)
			return
		}
		defer conn.Close()
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(topic+"_"+group, false, false, false)
			_ = ch.ExchangeDelete(topic, false, false)
		}
	case config.BrokerNATS:
		nc, err := nats.Connect(traceNATSURL)
		if err != nil {
			t.Logf("delete NATS stream %s: %v", topic, err)
			return
		}
		defer nc.Close()
		if js, err := nc.JetStream(); err == nil {
			_ = js.DeleteStream(topic) // its consumers go with it
		}
	}
}
