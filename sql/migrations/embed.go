// Package migrations holds the schema as goose migrations, embedded in the
// binary so that `orderpaid migrate` needs no files on disk.
package migrations

import "embed"

// FS holds every migration file.
//
//go:embed *.sql
var FS embed.FS
