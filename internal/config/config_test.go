package config_test

import (
	"strings"
	"testing"

	"github.com/orderpaid/orderpaid/internal/config"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string // a substring naming the variable; "" for success
	}{
		{"defaults", nil, ""},
		{"every broker", map[string]string{"BROKER": "nats", "BROKER_PREFIX": "t_1"}, ""},
		{"unknown broker", map[string]string{"BROKER": "kafka"}, "BROKER"},
		{"bad prefix", map[string]string{"BROKER_PREFIX": "Has.Dots"}, "BROKER_PREFIX"},
		{"bad URL", map[string]string{"FAKES_URL": "localhost"}, "FAKES_URL"},
		{"bad duration", map[string]string{"SHUTDOWN_TIMEOUT": "soon"}, "SHUTDOWN_TIMEOUT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load(func(k string) string { return tt.env[k] })
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if cfg.WebhookSecret == "" || cfg.HTTPAddr == "" {
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
