#!/usr/bin/env bash
# The test command of the README: everything CI checks, in order, with a line
# per step. Needs Go and a PostgreSQL on 127.0.0.1:5432 (RabbitMQ and NATS for
# the broker tests; outside CI those tests skip with a message when down).
# Usage: scripts/test.sh            (or: make test)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

step() { printf '\n==> %s\n' "$*"; }

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; exit 1; fi

step "sqlc: generated code matches sql/ (sqlc is built from scripts/tools/go.mod)"
go tool -modfile=scripts/tools/go.mod sqlc diff || {
  echo "internal/platform/queries or internal/lab/labqueries is stale: run 'go tool -modfile=scripts/tools/go.mod sqlc generate' and commit"; exit 1; }

step "go vet"
go vet ./...

step "fuzz: 10s per target (the committed corpus also runs in go test)"
for target in "FuzzParse ./internal/webhook" "FuzzVerify ./internal/webhook" "FuzzDecodeBody ./internal/payment"; do
  set -- $target
  go test -run '^$' -fuzz "^$1\$" -fuzztime 10s "$2" | tail -1
done

step "go test (real PostgreSQL, RabbitMQ, NATS)"
go test -count=1 -timeout 20m ./... 2>&1 | tee /tmp/orderpaid-test.log

step "broker outage on RabbitMQ (stops and starts the local RabbitMQ app, so it runs alone)"
ORDERPAID_DISRUPTIVE=1 go test -count=1 -run 'TestBrokerDownAndBack/amqp' ./cmd/orderpaid

step "soak with a PostgreSQL restart (restarts the local PostgreSQL, so it runs alone)"
ORDERPAID_DISRUPTIVE=1 go test -count=1 -run 'TestSoakUnderFaults' ./internal/lab/soak
