package main

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
)

// otlpReceiver is a minimal OTLP/HTTP trace receiver: what Jaeger or a
// collector does on :4318/v1/traces, keeping the spans for the test.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    spans
	services map[string]bool
}

func startOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	t.Helper()
	rcv := &otlpReceiver{services: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = gz
		}
		raw, err := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(raw, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rcv.add(&req)
		resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	t.Cleanup(srv.Close)
	return rcv, srv.URL
}

func (rcv *otlpReceiver) add(req *coltracepb.ExportTraceServiceRequest) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		rcv.services[attrMap(rs.GetResource().GetAttributes())["service.name"]] = true
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				rcv.spans = append(rcv.spans, span{
					name:    s.Name,
					kind:    strings.ToLower(strings.TrimPrefix(s.Kind.String(), "SPAN_KIND_")),
					traceID: hex.EncodeToString(s.TraceId), spanID: hex.EncodeToString(s.SpanId),
					parentID: hex.EncodeToString(s.ParentSpanId),
					attrs:    attrMap(s.Attributes),
				})
			}
		}
	}
}

func (rcv *otlpReceiver) snapshot() (spans, map[string]bool) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	services := map[string]bool{}
	for k, v := range rcv.services {
		services[k] = v
	}
	return append(spans(nil), rcv.spans...), services
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		default:
			m[kv.Key] = kv.GetValue().String()
		}
	}
	return m
}

// TestTracesExportedOverOTLP runs `orderpaid-lab all` with only the standard
// OTEL_* variables pointing at a receiver the test starts, pays an order
// through the fake gateway, and checks that the spans of the whole flow
// arrive over real OTLP/HTTP, under the configured service name, as one
// trace from the gateway's webhook to the notification provider's call. It
// also reads the counters on /metrics.
func TestTracesExportedOverOTLP(t *testing.T) {
	t.Parallel()
	rcv, endpoint := startOTLPReceiver(t)
	_, dbURL := pgtest.NewDatabase(t)
	out := newAddrWatcher("api", "fakes")
	startRun(t, map[string]string{
		"DATABASE_URL": dbURL, "HTTP_ADDR": "127.0.0.1:0", "FAKES_ADDR": "127.0.0.1:0",
		"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "orderpaid-otlp-test",
		"OTEL_BSP_SCHEDULE_DELAY": "100",
	}, out, "all")
	api := out.addr(t, "api")
	eventually(t, 10*time.Second, "api healthy", func() (bool, string) { return healthy(api + "/healthz") })

	var created struct{ ID string }
	call(t, "POST", api+"/orders", nil, map[string]any{"customer_id": "c1", "affiliate_id": "a1", "amount_cents": 10000, "currency": "BRL"}, &created)
	if got := call(t, "POST", api+"/orders/"+created.ID+"/payments", map[string]string{"Idempotency-Key": "otlp-" + created.ID}, map[string]any{}, nil); got != http.StatusCreated {
		t.Fatalf("payment = %d, want 201", got)
	}
	var received spans
	var services map[string]bool
	eventually(t, 30*time.Second, "the order's spans exported", func() (bool, string) {
		received, services = rcv.snapshot()
		n := len(received.named("relay order_confirmed").where(func(s span) bool { return s.attrs["order.id"] == created.ID }))
		return n > 0 && len(received.named("process order_confirmed")) > 0, received.tree()
	})
	if !services["orderpaid-otlp-test"] || len(services) != 1 {
		t.Errorf("service names %v, want only orderpaid-otlp-test (OTEL_SERVICE_NAME)", services)
	}
	checkOrderTrace(t, received, created.ID, "postgresql")

	resp, err := http.Get(api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`orderpaid_effects_total{`, `idempotency_technique="state_check"`, `idempotency_outcome="applied"`,
		`orderpaid_handler_executions_total{`, `orderpaid_outbox_relay_lag_seconds_bucket{`,
		`orderpaid_outbox_backlog{`, `orderpaid_poison_pending{`, `http_server_request_duration_seconds_bucket{`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("GET /metrics lacks %s", want)
		}
	}
}
