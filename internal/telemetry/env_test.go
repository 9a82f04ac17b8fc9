package telemetry

import (
	"strings"
	"testing"
)

func TestReadSettings(t *testing.T) {
	tests := []struct {
		name                  string
		env                   map[string]string
		wantTraces, wantPush  string
		wantErr, wantDisabled bool
	}{
		{name: "nothing set: traces off, metrics only on /metrics"},
		{name: "an endpoint alone turns traces on, not the metrics push",
			env:        map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318/"},
			wantTraces: "http://localhost:4318/v1/traces"},
		{name: "otlp with no endpoint uses the default one",
			env:        map[string]string{"OTEL_TRACES_EXPORTER": "otlp"},
			wantTraces: "http://localhost:4318/v1/traces"},
		{name: "the signal's own endpoint is used as it is",
			env:        map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://jaeger:4318/custom"},
			wantTraces: "http://jaeger:4318/custom"},
		{name: "none wins over an endpoint",
			env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://jaeger:4318"}},
		{name: "metrics pushed when OTEL_METRICS_EXPORTER lists otlp",
			env:      map[string]string{"OTEL_METRICS_EXPORTER": "prometheus, otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
			wantPush: "http://c:4318/v1/metrics", wantTraces: "http://c:4318/v1/traces"},
		{name: "OTEL_SDK_DISABLED turns everything off",
			env:          map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "zipkin"},
			wantDisabled: true},
		{name: "grpc is refused", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: true},
		{name: "an unknown exporter is refused", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: true},
		{name: "an endpoint that is not a URL is refused", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "jaeger:4318"}, wantErr: true},
		{name: "a bad batch delay is refused", env: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "5s"}, wantErr: true},
		{name: "a bad resource attribute is refused", env: map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "novalue"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := readSettings(func(k string) string { return tt.env[k] }, "orderpaid-test")
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "OTEL_") {
					t.Fatalf("err = %v, want an error naming the OTEL_ variable", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.tracesURL != tt.wantTraces || s.metricsURL != tt.wantPush || s.disabled != tt.wantDisabled {
				t.Errorf("traces %q push %q disabled %v, want %q %q %v", s.tracesURL, s.metricsURL, s.disabled, tt.wantTraces, tt.wantPush, tt.wantDisabled)
			}
		})
	}
}

func TestResourceAttributesAndServiceName(t *testing.T) {
	env := map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=dev,team=pay%20ments", "OTEL_SERVICE_NAME": "api-1"}
	s, err := readSettings(func(k string) string { return env[k] }, "orderpaid-api")
	if err != nil {
		t.Fatal(err)
	}
	if s.service != "api-1" || len(s.resource) != 2 || s.resource[1].Value.AsString() != "pay ments" {
		t.Errorf("service %q resource %v", s.service, s.resource)
	}
}
