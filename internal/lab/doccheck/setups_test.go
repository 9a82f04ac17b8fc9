package doccheck_test

import "testing"

// pageSetup is what a page's console blocks need before their first command,
// as the page tells its reader (a stack started, an order paid, the ids the
// reader then types). Pages not in setups get the default: `orderpaid-lab all`
// on a fresh database, API_URL and FAKES_URL pointing at it.
type pageSetup struct {
	inRepo   bool                                  // the commands run in the repository's root (else in a directory of their own)
	stack    string                                // bash that starts what the page's commands talk to; default startAll
	fixture  string                                // bash run after the stack; each line "SUBST PAGE=ACTUAL" it prints is a substitution
	empty    []string                              // databases the page names that must exist and be empty: their URLs are substituted
	before   map[string]string                     // command -> bash run just before it
	beforeGo map[string]func(*testing.T, *session) // command -> what the test does just before it
	// twinsShare: the page's blocks depend on nothing a run made, so its
	// pt-BR twin reads the outputs of the English page's identical blocks.
	twinsShare bool
}

// startAll starts `orderpaid-lab all` on DATABASE_URL, listening on
// API_ADDR and FAKES_ADDR. Each process is started from a subshell, so that
// it is not a job of the reader's shell (a page's `wait` waits for its own
// jobs only), as in a terminal of its own.
const startAll = `(HTTP_ADDR=$API_ADDR FAKES_ADDR=$FAKES_ADDR WEBHOOK_URL=$API_URL/webhooks/payments orderpaid-lab all >"$WORK/all.out" 2>"$WORK/all.log" &)
wait_line "$WORK/all.out" "worker running"`

// startApart starts the fakes, the api and the worker as three processes,
// as the operations page does, so that the worker can be restarted alone
// (start_worker PROVIDER_URL, stop_worker).
const startApart = `start_worker() {
  local out="$WORK/worker$RANDOM.out"
  WORKER=$(ORDERPAID_DEV=1 FAKES_URL=$1 orderpaid worker >"$out" 2>&1 & echo $!)
  wait_line "$out" "worker running"
}
stop_worker() { kill $WORKER; while kill -0 $WORKER 2>/dev/null; do sleep 0.1; done; }
(ORDERPAID_DEV=1 FAKES_ADDR=$FAKES_ADDR WEBHOOK_URL=$API_URL/webhooks/payments orderpaid-lab fakes >"$WORK/fakes.out" 2>&1 &)
(ORDERPAID_DEV=1 HTTP_ADDR=$API_ADDR orderpaid api >"$WORK/api.out" 2>&1 &)
wait_line "$WORK/fakes.out" "fakes listening" && wait_line "$WORK/api.out" "api listening" && start_worker "$FAKES_URL"`

// payOrder pays one order of c1 through the api and waits for its e-mail;
// FIX_ORDER is its id.
const payOrder = `FIX_ORDER=$(curl -s -X POST $API_URL/orders -H 'Content-Type: application/json' -d "{\"customer_id\":\"c1\",\"affiliate_id\":\"a1\",\"amount_cents\":10000,\"currency\":\"BRL\"$ITEMS}" | jq -r .id)
curl -s -X POST $API_URL/orders/$FIX_ORDER/payments -H "Idempotency-Key: pay-$FIX_ORDER" -H 'Content-Type: application/json' -d '{}' >/dev/null
until curl -s $API_URL/orders/$FIX_ORDER/audit | jq -e '.effects.notification_sent == 1' >/dev/null; do sleep 0.2; done
`

// aroundNow substitutes the page's backfill range with one around now.
const aroundNow = `echo "SUBST 2026-12-02T04:59:00Z=$(date -u -d '-1 min' +%Y-%m-%dT%H:%M:%SZ)"
echo "SUBST 2026-12-02T05:00:00Z=$(date -u -d '+1 min' +%Y-%m-%dT%H:%M:%SZ)"
`

var setups = map[string]pageSetup{
	// The demo's order (make demo), and a range around its paid_at.
	"docs/mental-model.md": {fixture: `orderpaid-lab demo --api $API_URL --fakes $FAKES_URL >"$WORK/demo.out" || { cat "$WORK/demo.out"; echo FIXTURE FAILED; }
echo "SUBST 7a33074e-c006-44fe-87d6-9f9ba348b2fb=$(psql -X "$DATABASE_URL" -Atc 'SELECT id FROM orders')"
` + aroundNow},
	// An order paid a moment ago, its order_confirmed's id found as the page's
	// first psql line finds it; the poison queue's incident restarts the
	// worker with the wrong provider URL, then with the right one.
	"docs/operations.md": {stack: startApart, empty: []string{"scratch", "fresh"},
		fixture: payOrder + `echo "SUBST 7a33074e-c006-44fe-87d6-9f9ba348b2fb=$FIX_ORDER"
echo "SUBST 3e28b555-6e9e-5d6e-a000-5070229128b9=$(psql -X "$DATABASE_URL" -Atc "SELECT payload->>'uuid' FROM watermill_outbox WHERE payload->>'destination_topic' = 'order_confirmed' AND payload->'metadata'->>'order_id' = '$FIX_ORDER'")"
printf 'whsec_%s' "$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')" >secret.txt
echo "SUBST [::]:8080=[::]$HTTP_ADDR"
` + aroundNow,
		before: map[string]string{
			`ORDER=$(curl -s -X POST $API_URL/orders -H 'Content-Type: application/json' -d '{"customer_id":"c1","affiliate_id":"a1","amount_cents":10000,"currency":"BRL"}' | jq -r .id)`: `stop_worker; start_worker "$API_URL"`,
			`go run ./cmd/orderpaid reprocess --poison --dry-run`: `stop_worker; start_worker "$FAKES_URL"`,
			// The worker stopped with 8 confirmations relayed to the postgres broker and not read.
			`BROKER=amqp go run ./cmd/orderpaid worker`: `stop_worker; psql -X "$DATABASE_URL" -qc "INSERT INTO watermill_order_confirmed (uuid, payload, metadata, transaction_id) SELECT gen_random_uuid()::text, '{}', '{}', pg_current_xact_id() FROM generate_series(1, 8)"`,
		},
		beforeGo: map[string]func(*testing.T, *session){`BROKER=nats go run ./cmd/orderpaid worker`: strandInRabbitMQ}},
	// The page starts its own stack, on its own database and ports.
	"docs/techniques/guarded-counter.md": {stack: "true", fixture: `echo "SUBST 127.0.0.1:18180=$API_ADDR"
echo "SUBST 127.0.0.1:18181=$FAKES_ADDR"
echo "SUBST orderpaid_doc_stock=$DOC_DB"
`},
	// A paid order of 2 units of sku-1 with an affiliate, on the guarded
	// counter's ports.
	"docs/techniques/compensation.md": {fixture: `curl -s -X PUT $API_URL/stock/sku-1 -H 'Content-Type: application/json' -d '{"available":10}' >/dev/null
ITEMS=',"items":[{"sku":"sku-1","quantity":2}]'
` + payOrder + `echo "SUBST b78e1d60-f690-4dab-816a-c11bdbf65187=$FIX_ORDER"
echo "SUBST 127.0.0.1:18180=$API_ADDR"
echo "SUBST 127.0.0.1:18181=$FAKES_ADDR"
`},
	// Scenario runs: each has a world of its own.
	"docs/scenarios.md": {stack: "true", twinsShare: true},
	// The model checked in a directory of its own, the crash matrix's cells.
	"docs/workshop.md": {inRepo: true, stack: "true", twinsShare: true, fixture: `echo "SUBST /tmp/model=$WORK/model"`},
}
