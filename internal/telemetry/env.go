package telemetry

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// settings is what Setup takes from the standard OTEL_* variables.
type settings struct {
	// disabled: OTEL_SDK_DISABLED=true; every signal is the no-op.
	disabled bool
	// service is OTEL_SERVICE_NAME, or the default the command passes.
	service string
	// resource holds OTEL_RESOURCE_ATTRIBUTES.
	resource []attribute.KeyValue
	// tracesURL is where spans go over OTLP/HTTP; "" means traces are off.
	tracesURL string
	// metricsURL is where metrics are pushed over OTLP/HTTP; "" means they
	// are only served on /metrics.
	metricsURL string
	// batchDelay is OTEL_BSP_SCHEDULE_DELAY; 0 keeps the SDK's default (5s).
	batchDelay time.Duration
	// metricInterval is OTEL_METRIC_EXPORT_INTERVAL; 0 keeps the default (60s).
	metricInterval time.Duration
}

// readSettings reads the OTEL_* variables this package honours. The rules:
//
//   - traces are exported when OTEL_TRACES_EXPORTER=otlp, or when it is unset
//     and OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set; off
//     otherwise. OTEL_TRACES_EXPORTER=none turns them off.
//   - metrics are always served on /metrics (Prometheus), and also pushed
//     over OTLP when OTEL_METRICS_EXPORTER lists otlp. Unlike the SDK's
//     default, an endpoint alone does not push metrics: Jaeger, the usual
//     endpoint here, takes traces only.
//   - the protocol is http/protobuf (OTLP/HTTP, port 4318); grpc is refused
//     with a message saying so.
//
// Other OTEL_* variables (sampler, span limits, exporter headers and
// timeouts) are read by the SDK itself.
func readSettings(getenv func(string) string, defaultService string) (settings, error) {
	s := settings{service: cmp.Or(strings.TrimSpace(getenv("OTEL_SERVICE_NAME")), defaultService)}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		s.disabled = true
		return s, nil
	}
	var err error
	if s.resource, err = resourceAttributes(getenv("OTEL_RESOURCE_ATTRIBUTES")); err != nil {
		return settings{}, err
	}
	if s.tracesURL, err = otlpURL(getenv, "TRACES", "traces", []string{"otlp", "none"}, true); err != nil {
		return settings{}, err
	}
	if s.metricsURL, err = otlpURL(getenv, "METRICS", "metrics", []string{"otlp", "prometheus", "none"}, false); err != nil {
		return settings{}, err
	}
	if s.batchDelay, err = millis(getenv, "OTEL_BSP_SCHEDULE_DELAY"); err != nil {
		return settings{}, err
	}
	if s.metricInterval, err = millis(getenv, "OTEL_METRIC_EXPORT_INTERVAL"); err != nil {
		return settings{}, err
	}
	return s, nil
}

// otlpURL decides whether one signal is exported over OTLP and where to.
// endpointImplies says whether an endpoint alone (no OTEL_<SIGNAL>_EXPORTER)
// turns the export on.
func otlpURL(getenv func(string) string, signal, path string, allowed []string, endpointImplies bool) (string, error) {
	exporterVar := "OTEL_" + signal + "_EXPORTER"
	var exporters []string
	for _, e := range strings.Split(getenv(exporterVar), ",") {
		if e = strings.ToLower(strings.TrimSpace(e)); e != "" {
			exporters = append(exporters, e)
			if !slices.Contains(allowed, e) {
				return "", fmt.Errorf("%s=%q: want one of %s", exporterVar, getenv(exporterVar), strings.Join(allowed, ", "))
			}
		}
	}
	specific := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT"))
	general := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	on := slices.Contains(exporters, "otlp") || (len(exporters) == 0 && endpointImplies && (specific != "" || general != ""))
	if !on {
		return "", nil
	}
	protocolVar := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	if getenv(protocolVar) == "" {
		protocolVar = "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	if p := strings.TrimSpace(getenv(protocolVar)); p != "" && p != "http/protobuf" {
		return "", fmt.Errorf("%s=%q: only http/protobuf is built in (Jaeger and the collector take it on port 4318)", protocolVar, p)
	}
	endpoint, variable := specific, "OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT"
	if endpoint == "" {
		// The general endpoint is a base URL: the signal's path is appended.
		endpoint = strings.TrimRight(cmp.Or(general, "http://localhost:4318"), "/") + "/v1/" + path
		variable = "OTEL_EXPORTER_OTLP_ENDPOINT"
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: %q is not an http(s) URL such as http://localhost:4318", variable, endpoint)
	}
	return endpoint, nil
}

// resourceAttributes parses OTEL_RESOURCE_ATTRIBUTES: key=value pairs,
// comma-separated, values percent-encoded.
func resourceAttributes(raw string) ([]attribute.KeyValue, error) {
	var attrs []attribute.KeyValue
	for _, pair := range strings.Split(raw, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %q is not key=value", pair)
		}
		value, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: value of %s: %w", k, err)
		}
		attrs = append(attrs, attribute.String(k, value))
	}
	return attrs, nil
}

// millis reads a duration given in milliseconds, as the SDK variables are.
func millis(getenv func(string) string, name string) (time.Duration, error) {
	raw := strings.TrimSpace(getenv(name))
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive number of milliseconds", name, raw)
	}
	return time.Duration(n) * time.Millisecond, nil
}
