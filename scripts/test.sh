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
# fuzz TARGET PACKAGE: a failing input is a failure (Go saves it under the
# package's testdata/fuzz/TARGET: commit it once fixed, it then runs in go
# test). A failure with no input saved is the fuzzing engine's own (a worker
# that hung on a loaded machine): it says so, shows why, and tries once more.
fuzz() {
  local out; out=$(mktemp)
  for attempt in 1 2; do
    if go test -run '^$' -fuzz "^$1\$" -fuzztime 10s "$2" >"$out" 2>&1; then
      tail -1 "$out"; rm -f "$out"; return 0
    fi
    if [ -n "$(git status --porcelain -- "$2/testdata/fuzz/$1" 2>/dev/null)" ]; then
      cat "$out"; rm -f "$out"
      echo "fuzz: $1 found a failing input, saved under $2/testdata/fuzz/$1 (see above)"; return 1
    fi
    echo "fuzz: $1 failed with no failing input saved (attempt $attempt of 2): the fuzzing engine's own failure:"
    tail -15 "$out"
  done
  rm -f "$out"; return 1
}
fuzz FuzzParse ./internal/webhook
fuzz FuzzVerify ./internal/webhook
fuzz FuzzDecodeBody ./internal/payment

step "go test (real PostgreSQL, RabbitMQ, NATS)"
# Three packages at once (go test's default is one per core, two here): the
# long ones (the scenarios, the crash matrix, the lab's processes, the docs'
# stacks, the soaks, the model) mostly wait on child processes and brokers,
# so a third keeps the cores busy; the scenarios alone take about 7 minutes.
go test -count=1 -p 3 -timeout 20m ./... 2>&1 | tee /tmp/orderpaid-test.log

step "broker outage on RabbitMQ (stops and starts the local RabbitMQ app, so it runs alone)"
ORDERPAID_DISRUPTIVE=1 go test -count=1 -run 'TestBrokerDownAndBack/amqp' ./cmd/orderpaid-lab

step "the outbox's switch back (holds the server's oldest transaction open, stalling every postgres-broker consumer, so it runs alone)"
ORDERPAID_DISRUPTIVE=1 go test -count=1 -run 'TestSwitchBack' ./internal/outbox

step "the crash matrix's e-mail and refund cells (many processes at once, so they run alone)"
ORDERPAID_DISRUPTIVE=1 go test -count=1 -run 'TestCrashMatrixShowsTheDamageOfTheGuardsBehindOthers|TestCrashMatrixHoldsInTheRefund|TestCrashMatrixHoldsTheRefundNoticeInBatchMode' ./internal/lab/crashmatrix

step "soak with a PostgreSQL restart (restarts the local PostgreSQL, so it runs alone)"
ORDERPAID_DISRUPTIVE=1 go test -count=1 -run 'TestSoakUnderFaults$' ./internal/lab/soak
