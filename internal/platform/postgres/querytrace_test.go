package postgres

import "testing"

func TestDescribeSQL(t *testing.T) {
	tests := []struct{ sql, name, operation string }{
		{"-- name: OrderMarkPaid :one\nUPDATE orders SET status = 'paid'\nWHERE id = $1", "OrderMarkPaid", "UPDATE"},
		{"-- name: LedgerEntryInsert :execrows\n\nINSERT INTO ledger_entries (entry_key) VALUES ($1)\nON CONFLICT DO NOTHING", "LedgerEntryInsert", "INSERT"},
		{"begin", "BEGIN", "BEGIN"},
		{"\n\t\tSELECT offset_acked FROM watermill_offsets_outbox", "SELECT", "SELECT"},
		{"-- a comment\n(SELECT 1)", "SELECT", "SELECT"},
		{"", "", ""},
	}
	for _, tt := range tests {
		if name, op := describeSQL(tt.sql); name != tt.name || op != tt.operation {
			t.Errorf("describeSQL(%q) = %q, %q; want %q, %q", tt.sql, name, op, tt.name, tt.operation)
		}
	}
}
