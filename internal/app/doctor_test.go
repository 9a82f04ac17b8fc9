package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestDoctorAuthAdvice covers what the server here (trust auth) cannot
// show: the answers of a server with Debian's default methods.
func TestDoctorAuthAdvice(t *testing.T) {
	t.Parallel()
	cc, err := pgx.ParseConfig("postgres://postgres@localhost:5432/orderpaid?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	withPassword := cc.Copy()
	withPassword.Password = "wrong"
	for _, tt := range []struct {
		name string
		cc   *pgx.ConnConfig
		err  error
		want []string
	}{
		{"scram, no password in the URL", cc, &pgconn.PgError{Code: "28P01", Message: `password authentication failed for user "postgres"`},
			[]string{"wants a password", "scram-sha-256", "postgres://postgres:PASSWORD@localhost:5432/orderpaid", "ALTER ROLE postgres PASSWORD", "trust", "reload"}},
		{"wrong password", withPassword, &pgconn.PgError{Code: "28P01", Message: `password authentication failed for user "postgres"`},
			[]string{"is not role postgres's", "trust"}},
		{"peer on the socket", cc, &pgconn.PgError{Code: "28000", Message: `Peer authentication failed for user "postgres"`},
			[]string{"peer authentication", "host localhost", "trust"}},
		{"no pg_hba line", cc, &pgconn.PgError{Code: "28000", Message: `no pg_hba.conf entry for host "10.0.0.2"`},
			[]string{"host all all 127.0.0.1/32 trust", "pg_hba.conf", "reload"}},
		{"no such role", cc, &pgconn.PgError{Code: "28000", Message: `role "alice" does not exist`},
			[]string{"createuser"}},
	} {
		r := postgresFailure("localhost:5432 as postgres", tt.cc, tt.err)
		if r.status != statusFail {
			t.Errorf("%s: status %s, want FAIL", tt.name, r.status)
		}
		for _, w := range tt.want {
			if !strings.Contains(r.detail, w) {
				t.Errorf("%s: advice lacks %q: %s", tt.name, w, r.detail)
			}
		}
		if strings.Contains(r.detail, "wrong") {
			t.Errorf("%s: the advice shows the password: %s", tt.name, r.detail)
		}
	}
}

// TestDoctorMinGoVersionIsGoMod keeps minGoVersion, used outside the
// repository, equal to go.mod's go line.
func TestDoctorMinGoVersionIsGoMod(t *testing.T) {
	t.Parallel()
	got := goLine(filepath.Join("..", "..", "go.mod"))
	if got != minGoVersion {
		t.Errorf("go.mod's go line is %q, minGoVersion %q: update minGoVersion in doctor.go", got, minGoVersion)
	}
}
