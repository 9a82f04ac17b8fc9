package guard_test

import (
	"testing"

	"github.com/orderpaid/orderpaid/internal/platform/guard"
)

func TestWithout(t *testing.T) {
	tests := []struct {
		list    string
		wantOff string
		wantErr bool
	}{
		{"", "", false},
		{"state-check", "state-check", false},
		{"inbox, provider-key", "inbox,provider-key", false},
		{"everything", "", true},
	}
	for _, tt := range tests {
		s, err := guard.Without(tt.list)
		if (err != nil) != tt.wantErr {
			t.Errorf("Without(%q) error = %v, want error %v", tt.list, err, tt.wantErr)
			continue
		}
		if err == nil && s.Off() != tt.wantOff {
			t.Errorf("Without(%q).Off() = %q, want %q", tt.list, s.Off(), tt.wantOff)
		}
	}
	if len(guard.Names()) != 8 {
		t.Errorf("Names() = %v, want the 8 guards", guard.Names())
	}
}
