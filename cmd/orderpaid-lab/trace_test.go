package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/orderpaid/orderpaid/internal/consumer"
	"github.com/orderpaid/orderpaid/internal/httpapi"
	"github.com/orderpaid/orderpaid/internal/lab/fakes"
	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/messages"
	"github.com/orderpaid/orderpaid/internal/notify"
	"github.com/orderpaid/orderpaid/internal/order"
	"github.com/orderpaid/orderpaid/internal/outbox"
	"github.com/orderpaid/orderpaid/internal/platform/broker"
	"github.com/orderpaid/orderpaid/internal/platform/config"
	"github.com/orderpaid/orderpaid/internal/platform/queries"
	"github.com/orderpaid/orderpaid/internal/poison"
	"github.com/orderpaid/orderpaid/internal/telemetry"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// tracedFlow is the whole flow in-process on BROKER=postgres, traced into an
// in-memory exporter and metered into a ManualReader.
type tracedFlow struct {
	pool    *pgxpool.Pool
	broker  *broker.Broker
	api     string
	spans   *tracetest.InMemoryExporter
	metrics *sdkmetric.ManualReader
}

var flowSecret = []byte("trace-test-secret")

func startTracedFlow(t *testing.T) *tracedFlow {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pool, _ := pgtest.NewDatabase(t)
	f := &tracedFlow{pool: pool, spans: tracetest.NewInMemoryExporter(), metrics: sdkmetric.NewManualReader()}
	tel, err := telemetry.New(telemetry.NewTracerProvider(sdktrace.WithSyncer(f.spans)),
		sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.metrics)))
	if err != nil {
		t.Fatal(err)
	}
	provider := httptest.NewServer(fakes.New(fakes.NewGateway(fakes.GatewayConfig{}), fakes.NewNotifier()))
	t.Cleanup(provider.Close)

	if f.broker, err = broker.New(ctx, config.Config{Broker: config.BrokerPostgres}, pool, watermill.NopLogger{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range consumer.Subscriptions() {
		if err := f.broker.Provision(s.Topic, s.Group); err != nil {
			t.Fatal(err)
		}
	}
	system := telemetry.MessagingSystem(config.BrokerPostgres)
	relay, err := outbox.NewRelay(pool, f.broker.Publisher, watermill.NopLogger{}, outbox.RelayConfig{
		PollInterval: 20 * time.Millisecond, TracerProvider: tel.TracerProvider, System: system, Metrics: tel.Metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	consumers := consumer.NewConsumers(pool, notify.NewClient(provider.URL, tel.HTTPClient(5*time.Second))).
		WithTelemetry(tel.Metrics, nil)
	router, err := consumer.NewRouter(f.broker, consumers, poison.NewStore(queries.New(pool)), watermill.NopLogger{}, consumer.RouterConfig{
		Outer: []message.HandlerMiddleware{telemetry.ConsumerMiddleware(tel.TracerProvider, system)},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	go func() { _ = relay.Run(ctx); done <- struct{}{} }()
	go func() { _ = router.Run(ctx); done <- struct{}{} }()
	api := httptest.NewServer(httpapi.NewServer(httpapi.Deps{
		Pool:      pool,
		Ingestor:  webhook.NewIngestor(pool, flowSecret).WithMetrics(tel.Metrics),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Telemetry: tel,
	}))
	f.api = api.URL
	t.Cleanup(func() { // LIFO: after this, the broker, then the database
		api.Close()
		cancel()
		<-done
		<-done
		_ = f.broker.Close()
	})
	return f
}

// newOrder creates a pending 100.00 BRL order with an affiliate.
func (f *tracedFlow) newOrder(t *testing.T) queries.Order {
	t.Helper()
	o, err := order.Create(context.Background(), queries.New(f.pool), order.NewOrder{CustomerID: "c1", AffiliateID: "a1", AmountCents: 10000, Currency: "BRL"})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// webhook posts a signed payment.succeeded for o and returns the outcome.
func (f *tracedFlow) webhook(t *testing.T, o queries.Order, eventID string) string {
	t.Helper()
	body := fmt.Appendf(nil, `{"id":%q,"type":"payment.succeeded","data":{"order_id":%q,"amount_cents":%d}}`, eventID, o.ID, o.AmountCents)
	req, _ := http.NewRequest(http.MethodPost, f.api+"/webhooks/payments", bytes.NewReader(body))
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(flowSecret, time.Now(), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res webhook.Result
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("webhook: status %d, decode error %v", resp.StatusCode, err)
	}
	return string(res.Outcome)
}

// waitSpans waits until at least n spans called name carry order.id.
func (f *tracedFlow) waitSpans(t *testing.T, name, orderID string, n int) spans {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		all := fromStubs(f.spans.GetSpans())
		got := all.named(name).where(func(s span) bool { return s.attrs["order.id"] == orderID })
		if len(got) >= n {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d span(s) %q for order %s within 30s, want %d; spans so far:\n%s", len(got), name, orderID, n, all.tree())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// counter reads the value of a counter for the attributes given.
func (f *tracedFlow) counter(t *testing.T, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := f.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want := attribute.NewSet(attrs...)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, dp := range sum.DataPoints {
					if dp.Attributes.Equals(&want) {
						return dp.Value
					}
				}
			}
		}
	}
	return 0
}

// TestOneOrderIsOneTrace sends one payment webhook through the whole flow and
// checks the single trace it makes (see checkOrderTrace), then repeats the
// webhook and redelivers order_paid, and checks that each repeat is traced
// and counted as a duplicate its guard absorbed.
func TestOneOrderIsOneTrace(t *testing.T) {
	t.Parallel()
	f := startTracedFlow(t)
	o := f.newOrder(t)
	id := o.ID.String()
	if got := f.webhook(t, o, "evt_1"); got != "applied" {
		t.Fatalf("first webhook: outcome %q, want applied", got)
	}
	f.waitSpans(t, "process order_confirmed", id, 1)
	first := checkOrderTrace(t, f.waitSpans(t, "relay order_confirmed", id, 1), id, "postgresql")

	t.Run("a repeated webhook is a trace of its own where the inbox answers already_applied", func(t *testing.T) {
		answer := []attribute.KeyValue{telemetry.AttrEffect.String("payment_event_accepted"), telemetry.AttrTechnique.String("webhook_inbox")}
		before := f.counter(t, telemetry.MetricDuplicates, answer...)
		if got := f.webhook(t, o, "evt_1"); got != "already_applied" {
			t.Fatalf("repeated webhook: outcome %q, want already_applied", got)
		}
		all := f.waitSpans(t, "effect payment_event_accepted", id, 2)
		dup := all.named("effect payment_event_accepted").where(func(s span) bool { return s.attrs["idempotency.outcome"] == "already_applied" })
		if len(dup) != 1 || dup[0].traceID == first[0].traceID {
			t.Fatalf("%d already_applied webhook inbox spans, want 1 in a new trace:\n%s", len(dup), all.tree())
		}
		if n := len(all.children(dup[0], "outbox_write order_paid")); n != 0 {
			t.Errorf("the duplicate webhook wrote %d order_paid to the outbox, want 0", n)
		}
		if got := f.counter(t, telemetry.MetricDuplicates, answer...) - before; got != 1 {
			t.Errorf("%s{webhook_inbox} went up by %d, want 1", telemetry.MetricDuplicates, got)
		}
	})

	t.Run("a redelivered order_paid is another execution in the same trace, every guard answering already_applied", func(t *testing.T) {
		process := first.named("process order_paid")[0]
		paid := []attribute.KeyValue{telemetry.AttrEffect.String("paid"), telemetry.AttrTechnique.String("state_check"), telemetry.AttrOutcome.String("already_applied")}
		commission := []attribute.KeyValue{telemetry.AttrEffect.String("commission"), telemetry.AttrTechnique.String("unique_ledger_key"), telemetry.AttrOutcome.String("already_applied")}
		paidBefore, commissionBefore := f.counter(t, telemetry.MetricEffects, paid...), f.counter(t, telemetry.MetricEffects, commission...)

		f.redeliver(t, messages.TopicOrderPaid, process.attrs["messaging.message.id"])
		all := f.waitSpans(t, "process order_paid", id, 2)
		runs := all.named("process order_paid").inTrace(process.traceID)
		if len(runs) != 2 {
			t.Fatalf("%d order_paid consumer spans in the order's trace, want 2:\n%s", len(runs), all.inTrace(process.traceID).tree())
		}
		again := runs.where(func(s span) bool { return s.spanID != process.spanID })[0]
		all.child(t, again, "effect paid", effectAttrs("state_check", "already_applied"))
		all.child(t, again, "effect commission", effectAttrs("unique_ledger_key", "already_applied"))
		if n := len(all.children(again, "effect confirmation_enqueued")); n != 0 {
			t.Errorf("the redelivery enqueued %d confirmation(s), want 0", n)
		}
		if got := f.counter(t, telemetry.MetricEffects, paid...) - paidBefore; got != 1 {
			t.Errorf("%s{paid, state_check, already_applied} went up by %d, want 1", telemetry.MetricEffects, got)
		}
		if got := f.counter(t, telemetry.MetricEffects, commission...) - commissionBefore; got != 1 {
			t.Errorf("%s{commission, unique_ledger_key, already_applied} went up by %d, want 1", telemetry.MetricEffects, got)
		}
	})
}

// redeliver publishes the message again, as the relay wrote it to the outbox
// (same id, payload and metadata, trace context included), straight to the
// broker: what a broker's redelivery looks like to the consumer.
func (f *tracedFlow) redeliver(t *testing.T, topic, messageID string) {
	t.Helper()
	row, err := queries.New(f.pool).OutboxFindByMessageID(context.Background(), messageID)
	if err != nil {
		t.Fatalf("find message %s in the outbox: %v", messageID, err)
	}
	var env struct {
		UUID     string            `json:"uuid"`
		Payload  []byte            `json:"payload"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(row.Envelope), &env); err != nil {
		t.Fatal(err)
	}
	msg := message.NewMessage(env.UUID, env.Payload)
	msg.Metadata = env.Metadata
	if err := f.broker.Publisher.Publish(topic, msg); err != nil {
		t.Fatal(err)
	}
}
