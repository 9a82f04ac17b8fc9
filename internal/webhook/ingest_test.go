package webhook_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/orderpaid/orderpaid/internal/lab/pgtest"
	"github.com/orderpaid/orderpaid/internal/telemetry"
	"github.com/orderpaid/orderpaid/internal/webhook"
)

// A refused signature is counted by reason, and nothing else happens.
func TestSignatureFailuresAreCounted(t *testing.T) {
	t.Parallel()
	pool, _ := pgtest.NewDatabase(t)
	reader := sdkmetric.NewManualReader()
	m, err := telemetry.NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	in := webhook.NewIngestor(pool, []byte("secret")).WithMetrics(m)
	body := []byte(`{"id":"evt_1","type":"payment.succeeded","data":{"order_id":"0b7e4c1a-5d7f-4f55-9a0e-3c2b1d4e5f60","amount_cents":1}}`)
	for _, sig := range []string{
		"", // missing
		webhook.Sign([]byte("another secret"), time.Now(), body),         // mismatch
		webhook.Sign([]byte("another secret"), time.Now(), body),         // mismatch
		webhook.Sign([]byte("secret"), time.Now().Add(-time.Hour), body), // expired
	} {
		if _, err := in.Ingest(context.Background(), sig, body); err == nil {
			t.Fatalf("signature %q accepted", sig)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if sum, ok := mt.Data.(metricdata.Sum[int64]); ok && mt.Name == telemetry.MetricSignatureFailures {
				for _, dp := range sum.DataPoints {
					reason, _ := dp.Attributes.Value(attribute.Key("reason"))
					got[reason.AsString()] = dp.Value
				}
			}
		}
	}
	if got["missing"] != 1 || got["mismatch"] != 2 || got["expired"] != 1 {
		t.Errorf("%s by reason = %v, want missing 1, mismatch 2, expired 1", telemetry.MetricSignatureFailures, got)
	}
}
