// Package crashmatrix crashes the flow at every place a process can die and
// checks, after recovery, that each effect happened once.
//
// The places are not named by hand. A clean run records every boundary the
// api and the worker meet (fault.Boundaries: each SQL statement by its sqlc
// name, BEGIN and COMMIT, each provider call, the end of each delivery or
// request). Then, for each boundary and each side of it (before it is sent;
// after its answer came back), a cell runs the same payment in a world of
// its own, with that process told to die there (--crash-at). The dead
// process is restarted, the broker redelivers, the relay republishes, the
// client retries with its key and then with a new one, as in production;
// once everything is quiet the cell reads the truth (the fake gateway's
// charges, the fake provider's e-mails, the tables) and holds it to one
// charge, one paid order, one commission, one confirmation and one e-mail.
//
// A cell is a scenario (internal/lab/scenario) built for its boundary, so
// it runs on the same stage, in parallel, on any broker.
package crashmatrix

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/orderpaid/orderpaid/internal/lab/childproc"
	"github.com/orderpaid/orderpaid/internal/lab/scenario"
	"github.com/orderpaid/orderpaid/internal/platform/fault"
)

// Flows maps each flow the matrix covers to the works it is made of, as
// fault.Boundaries names them (process/work).
// A consumer's flow has two works in batch mode (CONSUMER_BATCH_SIZE > 1):
// each message's ("worker/order_paid", its steps and calls) and the
// batch's ("worker/order_paid_batch", the statements for the whole set:
// telemetry.StartBatch).
var Flows = map[string][]string{
	"payment":          {"api/orders_payments"},
	"webhook":          {"api/webhooks_payments"},
	"order_paid":       {"worker/order_paid", "worker/order_paid_batch"},
	"relay":            {"worker/relay_order_paid", "worker/relay_order_confirmed", "worker/relay_wal"},
	"order_confirmed":  {"worker/order_confirmed", "worker/order_confirmed_batch"},
	"refund":           {"api/orders_refunds", "worker/refund_requested", "worker/refund_requested_batch"},
	"refund_webhook":   {refundWebhook},
	"refund_relay":     {"worker/relay_refund_requested", "worker/relay_order_refunded", "worker/relay_refund_confirmed"},
	"order_refunded":   {"worker/order_refunded", "worker/order_refunded_batch"},
	"refund_confirmed": {"worker/refund_confirmed", "worker/refund_confirmed_batch"},
}

// refundWebhook is the one boundary of the refund's webhook (payment.refunded)
// that the payment's webhook does not meet: its outbox write. Every other
// statement of the two webhooks has the same name (the work is the same
// endpoint's), and a crash there falls in the payment's, which comes first.
const refundWebhook = "api/webhooks_payments/outbox_write order_refunded#1"

// FlowNames lists Flows' keys in the order of the story.
var FlowNames = []string{"payment", "webhook", "relay", "order_paid", "order_confirmed",
	"refund", "refund_webhook", "refund_relay", "order_refunded", "refund_confirmed"}

// Lease is the api's --lease in every cell: a request killed while it holds
// a key or a charge attempt blocks the client's retry this long (30s in
// production), so the matrix shortens it.
const Lease = 2 * time.Second

// LostAfter is how long a cell with a guard off waits for the e-mail's
// consumer once its flow has run, before it counts what it sees: longer
// than the e-mail claim's lease (notify.ClaimLease, 15s), which a crash may
// leave held.
const LostAfter = 20 * time.Second

// Cell is one crash: a boundary and the side of it the process dies on;
// at depth two, a second crash as well.
type Cell struct {
	Boundary string
	Side     fault.When
	// Then, at depth two, is a second crash, BOUNDARY:before|after: the
	// restarted process dies there too, during the recovery of the first,
	// and is restarted again. "": one crash.
	Then string
}

func (c Cell) String() string { return c.Boundary + ":" + string(c.Side) }

// Process is "api" or "worker": the process that dies.
func (c Cell) Process() string { p, _, _ := strings.Cut(c.Boundary, "/"); return p }

// Flow is the flow of Flows the boundary belongs to.
func (c Cell) Flow() string { return flowOf(c.Boundary) }

func flowOf(boundary string) string {
	if boundary == refundWebhook {
		return "refund_webhook"
	}
	for name, works := range Flows {
		for _, w := range works {
			if strings.HasPrefix(boundary, w+"/") {
				return name
			}
		}
	}
	return ""
}

// Cells returns the cells of boundaries: before and after each statement or
// call; at a work's end ("end#1", the handler returned, the ack or the
// answer next) only before.
func Cells(boundaries []string) []Cell {
	var cells []Cell
	for _, b := range boundaries {
		cells = append(cells, Cell{Boundary: b, Side: fault.Before})
		if !strings.HasSuffix(b, "/end#1") {
			cells = append(cells, Cell{Boundary: b, Side: fault.After})
		}
	}
	return cells
}

// LostCells returns a cell for each COMMIT of boundaries whose answer is
// lost while its process lives on (fault.Lost): the commit is durable, the
// process sees its connection break and goes on as after any failure.
func LostCells(boundaries []string) []Cell {
	var cells []Cell
	for _, b := range boundaries {
		if fault.IsCommit(b) {
			cells = append(cells, Cell{Boundary: b, Side: fault.Lost})
		}
	}
	return cells
}

// Select keeps the boundaries of the flows named (all when empty).
func Select(boundaries []string, flows ...string) []string {
	var out []string
	for _, b := range boundaries {
		if f := flowOf(b); f != "" && (len(flows) == 0 || slices.Contains(flows, f)) {
			out = append(out, b)
		}
	}
	return out
}

// Discover runs the payment and its refund once with nothing crashing and
// returns every boundary their processes met, in the order first met (api
// first).
func Discover(ctx context.Context, cfg scenario.Config) ([]string, error) {
	dir, err := os.MkdirTemp(cfg.LogDir, "orderpaid-boundaries-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	logs := map[string]string{"api": filepath.Join(dir, "api"), "worker": filepath.Join(dir, "worker")}
	clean := &scenario.Scenario{
		Name:      "crashmatrix-clean-run",
		Summary:   "the payment once, every boundary recorded",
		Protected: scenario.Expect{Checks: checks(Providers{}, true)},
		Run: func(ctx context.Context, s *scenario.Stage) error {
			return pay(ctx, s, []string{"--boundaries", logs["api"]}, []string{"--boundaries", logs["worker"]}, nil, Providers{}, "", true)
		},
		Settled: func(c scenario.Counts) bool { return c.DoneRefundConfirmed >= 1 },
	}
	cfg.Parallel = 1
	r := scenario.RunOne(ctx, cfg, scenario.Case{Scenario: clean})
	if r.NotApplicable != "" {
		return nil, fmt.Errorf("the clean run cannot run here: %s", r.NotApplicable)
	}
	if !r.OK() {
		return nil, fmt.Errorf("the clean run failed: %s", r.Verdict())
	}
	var all []string
	for _, p := range []string{logs["api"], logs["worker"]} {
		names, err := readLines(p)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if !strings.HasPrefix(n, "@") && !slices.Contains(all, n) {
				all = append(all, n)
			}
		}
	}
	return all, nil
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the boundaries met: %w", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}

// slug names the cell's database and log directory: at most 34 characters
// of [a-z0-9-] ("cm-order-paid-ordermarkpaid-1-a").
func (c Cell) slug() string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(c.Boundary, "api/"), "worker/")) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if s := b.String(); s != "" && !strings.HasSuffix(s, "-") {
			b.WriteByte('-')
		}
	}
	s := b.String()
	max, then := 29, ""
	if c.Then != "" {
		// The second crash as a short hash: the name stays short and each
		// pair's world its own.
		h := fnv.New32a()
		h.Write([]byte(c.Then))
		max, then = 21, fmt.Sprintf("-%07x", h.Sum32()&0xfffffff)
	}
	if len(s) > max {
		s = s[len(s)-max:]
	}
	return "cm-" + strings.Trim(s, "-") + "-" + string(c.Side[0]) + then
}

// Scenario is the cell as a scenario: the payment with the cell's process
// dying at its boundary, recovered, and held to each effect once. Every
// process of the cell records the guards' answers in the file answers
// (--boundaries; Answers reads them).
func (c Cell) Scenario(without string, p Providers, answers string) *scenario.Scenario {
	var ran time.Time // when the cell's flow had run
	sc := &scenario.Scenario{
		Name:      c.slug(),
		Summary:   "the " + c.Process() + " dies " + string(c.Side) + " " + c.Boundary + thenSummary(c) + "; " + p.String(),
		Repeated:  "recovery from a crash " + string(c.Side) + " " + c.Boundary,
		Protected: scenario.Expect{Checks: checks(p, c.Refunds())},
		Run: func(ctx context.Context, s *scenario.Stage) error {
			defer func() { ran = time.Now() }()
			record := []string{"--boundaries", answers}
			crash := append([]string{"--crash-at", c.String()}, record...)
			if c.Process() == "api" {
				return pay(ctx, s, crash, record, &c, p, answers, c.Refunds())
			}
			return pay(ctx, s, record, crash, &c, p, answers, c.Refunds())
		},
		// Settled once the e-mail's consumer has run (the refund notice's,
		// in a refund cell); with a guard off, also once LostAfter has
		// passed with nothing moving: the message may then be lost, which is
		// the damage to show.
		Settled: func(cs scenario.Counts) bool {
			done := cs.DoneOrderConfirmed >= 1
			if c.Refunds() {
				done = cs.DoneRefundConfirmed >= 1
			}
			return done || (without != "" && time.Since(ran) > LostAfter)
		},
	}
	if without != "" {
		// With a guard off the cell records what happened; Damage reads it.
		sc.Without = map[string]scenario.Expect{without: {Note: "guard off"}}
	}
	return sc
}

// pay is the flow every cell runs: fakes, an api and a worker (each with
// its extra arguments), one order paid with a key; then, if cell is set,
// the dead process restarted and the client retrying as a real one would,
// with the providers behaving as p says. With refund the payment runs its
// course first and the order is then refunded: the cell's crash is in the
// refund (refundStory).
func pay(ctx context.Context, s *scenario.Stage, apiArgs, workerArgs []string, cell *Cell, p Providers, answers string, refund bool) error {
	if err := s.StartFakes(ctx); err != nil {
		return err
	}
	if (p.LateWebhook || p.NoWebhook) && !refund {
		if err := s.HoldWebhooks(ctx, true); err != nil {
			return err
		}
	}
	if p.SearchLag {
		if err := s.SearchLag(ctx, searchLag); err != nil {
			return err
		}
	}
	api, err := s.StartAPIWith(ctx, append([]string{"--lease", Lease.String()}, apiArgs...)...)
	if err != nil {
		return err
	}
	worker, err := s.StartWorker(ctx, nil, workerArgs...)
	if err != nil {
		return err
	}
	if err := s.SetStock(ctx, SKU, 10); err != nil {
		return err
	}
	id, err := s.NewOrder(ctx, map[string]any{"sku": SKU, "quantity": 1})
	if err != nil {
		return err
	}
	key := "pay-" + id.String()
	status, err := s.Pay(ctx, id, key, 10*time.Second)
	s.Logf("payment: status %d, err %v", status, err)
	if refund {
		if err == nil && status != http.StatusCreated {
			err = fmt.Errorf("the payment before the refund answered %d, want 201", status)
		}
		if err != nil {
			return err
		}
		return refundStory(ctx, s, id, procs{api, worker}, apiArgs, workerArgs, cell, p, answers)
	}
	// A client that had its answer does not retry; one that did not
	// retries with its key, then with a new one.
	answered := err == nil && status == http.StatusCreated
	retries := func() error {
		if answered {
			return nil
		}
		if p.LateRetry {
			// Back once the webhook has paid the order; at once if no
			// charge was made (no webhook will come).
			s.WaitFor(ctx, "the webhook's payment, before the client is back", LostAfter,
				func(c scenario.Counts) bool { return c.Paid >= 1 || c.Charges == 0 })
		}
		return retry(ctx, s, id, key)
	}
	if cell == nil {
		if err == nil && status != http.StatusCreated && status != http.StatusAccepted {
			err = fmt.Errorf("the clean payment answered %d, want 201", status)
		}
		return err
	}
	dead, args := procs{api, worker}.of(*cell, apiArgs, workerArgs)
	second := func() error { return nil }
	die := func() error { return restart(ctx, s, *cell, dead, args, p, &second) }
	// A crash in the payment's request comes before the client's retries;
	// any other comes after the webhook, so a late webhook (released once
	// the retries have their answers) comes first.
	reconcile := func() error { return nil }
	if p.NoWebhook {
		reconcile = func() error { return reconcileOnce(ctx, s, answers) }
	}
	if err := recoverFrom(ctx, s, p, cell.Flow() != "payment", die, retries, reconcile); err != nil {
		return err
	}
	if err := second(); err != nil {
		return err
	}
	if p.TwoEvents {
		// The guards' answers to the second event are not the crash's:
		// once the recovery has reached the e-mail and gone quiet (or
		// LostAfter has passed: with a guard off it may be lost), Answers
		// stops at this line.
		s.WaitFor(ctx, "the recovery", LostAfter, func(c scenario.Counts) bool { return c.DoneOrderConfirmed >= 1 })
		if err := sleep(ctx, 2*time.Second); err != nil {
			return err
		}
		if err := appendLine(answers, endOfRecovery); err != nil {
			return err
		}
		return secondEvent(ctx, s)
	}
	return nil
}

// endOfRecovery ends the answers of a cell's recovery in its answers file.
const endOfRecovery = "@@ end of the recovery"

// reconciled, in a cell's answers file, says orderpaid reconcile settled
// something of the cell (Reconciled).
const reconciled = "@@ reconciled"

// reconcileOnce is the operator of a world without the payment's webhook:
// once the client has its answer, orderpaid reconcile runs once. It settles
// the charge the gateway made and the service has not seen paid (the
// payment's event accepted as the webhook's would be) and exits 3: the
// worker has not applied it yet. A run that settles nothing exits 0.
func reconcileOnce(ctx context.Context, s *scenario.Stage, answers string) error {
	settled, err := s.Reconcile(ctx, time.Second)
	if err != nil || !settled {
		return err
	}
	return appendLine(answers, reconciled)
}

// Reconciled says whether orderpaid reconcile settled something of the
// cell whose answers file is path.
func Reconciled(path string) bool {
	lines, _ := readLines(path)
	return slices.Contains(lines, reconciled)
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	return errors.Join(err, f.Close())
}

// recoverFrom is a cell's recovery: the process's death and restart (die),
// the client's retries and the late webhook's release, or the operator's
// reconcile where no webhook comes, in the order they happen.
func recoverFrom(ctx context.Context, s *scenario.Stage, p Providers, afterWebhook bool, die, retries, reconcile func() error) error {
	release := func() error {
		if !p.LateWebhook {
			return reconcile()
		}
		return s.HoldWebhooks(ctx, false)
	}
	steps := []func() error{die, retries, release}
	if (p.LateWebhook || p.NoWebhook) && afterWebhook {
		steps = []func() error{retries, release, die}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// secondEvent makes the gateway send the payment's event again under a new
// event id (POST /charges/{id}/redeliver), once every charge is made, and
// waits until order_paid has handled it.
func secondEvent(ctx context.Context, s *scenario.Stage) error {
	ids, err := s.ChargeIDs(ctx)
	if err != nil || len(ids) == 0 {
		return fmt.Errorf("the second event: no charge to send it for (%v)", err)
	}
	before, err := s.WaitFor(ctx, "the first order_paid handled", 60*time.Second, func(c scenario.Counts) bool { return c.ExecOrderPaid >= 1 })
	if err != nil {
		return err
	}
	if err := s.Redeliver(ctx, ids[0], 1, false, true); err != nil {
		return err
	}
	_, err = s.WaitFor(ctx, "the second event's order_paid handled", 60*time.Second,
		func(c scenario.Counts) bool { return c.ExecOrderPaid > before.ExecOrderPaid })
	return err
}

// restart waits for the cell's process to die, makes the providers forget
// their keys if p says so, and starts the process again (without its
// --crash-at): the supervisor's restart. At depth two the restarted process
// is told to die at the cell's second crash, and restarted once more when it
// has; *second is then set to wait for that.
func restart(ctx context.Context, s *scenario.Stage, c Cell, dead *childproc.Proc, args []string, p Providers, second *func() error) error {
	if c.Side == fault.Lost {
		return waitLost(ctx, c, dead, args)
	}
	if err := waitDied(ctx, dead, c); err != nil {
		return err
	}
	if p.Forget {
		if err := errors.Join(s.ForgetGatewayKeys(ctx), s.ForgetProviderKeys(ctx)); err != nil {
			return err
		}
	}
	record := recordArgs(args)
	if len(record) == 2 {
		// What the restarted process meets from here is its recovery
		// (Recovery reads it).
		if err := appendLine(record[1], restarted); err != nil {
			return err
		}
	}
	start := func(extra ...string) (*childproc.Proc, error) {
		if c.Process() == "api" {
			return s.StartAPIWith(ctx, append([]string{"--lease", Lease.String()}, append(extra, record...)...)...)
		}
		return s.StartWorker(ctx, nil, append(extra, record...)...)
	}
	if c.Then == "" {
		_, err := start()
		return err
	}
	again, err := start("--crash-at", c.Then)
	if err != nil {
		return err
	}
	// The second crash may wait on what comes after this restart (the
	// client's retry, the webhook): it is waited for at the cell's end.
	done := make(chan error, 1)
	go func() {
		i := strings.LastIndex(c.Then, ":")
		if err := waitDied(ctx, again, Cell{Boundary: c.Then[:i], Side: fault.When(c.Then[i+1:])}); err != nil {
			done <- fmt.Errorf("%w: %w", ErrSecondNotReached, err)
			return
		}
		_, err := start()
		done <- err
	}()
	*second = func() error { return <-done }
	return nil
}

// waitLost is restart for a cell whose COMMIT's answer is lost: nothing
// dies, so nothing restarts; it waits until the process has lost the
// answer (fault.AnswerLost in its record), and its recovery starts there.
func waitLost(ctx context.Context, c Cell, p *childproc.Proc, args []string) error {
	record := recordArgs(args)
	if len(record) != 2 {
		return fmt.Errorf("%s: the process keeps no record (--boundaries)", c)
	}
	deadline := time.Now().Add(DieWithin)
	for {
		lines, _ := readLines(record[1])
		switch {
		case slices.Contains(lines, fault.AnswerLost):
			if p.Exited() {
				return fmt.Errorf("the %s exited with %d after the answer of %s was lost, want it alive; see %s", c.Process(), p.ExitCode(), c.Boundary, p.LogPath())
			}
			return appendLine(record[1], restarted)
		case time.Now().After(deadline):
			return fmt.Errorf("%w: the %s did not lose the answer of %s within %s", ErrNotReached, c.Process(), c.Boundary, DieWithin)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// recordArgs keeps the --boundaries of a dead process's arguments for the
// process that replaces it (without its --crash-at).
func recordArgs(args []string) []string {
	if i := slices.Index(args, "--boundaries"); i >= 0 && i+1 < len(args) {
		return args[i : i+2]
	}
	return nil
}

// Answers reads the guards' answers a cell's processes recorded in its
// recovery, from the restart of its process to the recovery's end: each
// technique that answered already_applied, once, in the order first seen
// ("state_check", "inbox").
func Answers(path string) []string {
	lines, _ := readLines(path)
	var out []string
	recovering := false
	for _, l := range lines {
		if l == endOfRecovery {
			break
		}
		if l == restarted {
			recovering = true
		}
		if strings.HasPrefix(l, "@@") || !recovering {
			continue
		}
		if t, ok := strings.CutPrefix(l, "@"); ok {
			t = strings.TrimSuffix(t, "=already_applied")
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// ErrNotReached is a cell whose process never met its boundary: with every
// guard on that is a failure (the cell proves nothing); with a guard off it
// is a path the guard's absence changed (its statement is not run), not a
// damage.
var ErrNotReached = errors.New("the boundary was never reached")

// DieWithin bounds the wait for a cell's process to die at its boundary:
// the e-mail's boundaries come after the webhook, the relay and order_paid,
// which on a loaded machine takes more than 15 seconds.
const DieWithin = 45 * time.Second

// waitDied waits for p to die at the cell's boundary: exit 137, as a
// SIGKILL. A process that does not die never met the boundary: the cell
// then proves nothing, which is an error.
func waitDied(ctx context.Context, p *childproc.Proc, c Cell) error {
	if err := p.WaitExit(ctx, DieWithin); err != nil {
		return fmt.Errorf("%w: the %s did not die at %s within %s (%v)", ErrNotReached, c.Process(), c, DieWithin, err)
	}
	if code := p.ExitCode(); code != 137 {
		return fmt.Errorf("the %s exited with %d, want 137 (killed at %s); see %s", c.Process(), code, c, p.LogPath())
	}
	return nil
}

// retry is the client after a crash: it pays again with the same key until
// it has an answer (a 409 while the key or the outcome is being settled
// means wait), then with a new key, as a client that lost track, until that
// has any answer (at depth two the api may die again under it).
func retry(ctx context.Context, s *scenario.Stage, uid uuid.UUID, key string) error {
	if err := payUntil(ctx, s, uid, "the same key", key, func(status int, title string) bool {
		return status == http.StatusOK || status == http.StatusCreated || strings.Contains(strings.ToLower(title), "already paid")
	}); err != nil {
		return err
	}
	return payUntil(ctx, s, uid, "a new key", key+"-new", func(int, string) bool { return true })
}

// payUntil pays with key until answered as done says, for 30 seconds.
func payUntil(ctx context.Context, s *scenario.Stage, uid uuid.UUID, which, key string, done func(status int, title string) bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, title, err := s.PayTitle(ctx, uid, key, 10*time.Second)
		s.Logf("retry with %s: %d %s (err %v)", which, status, title, err)
		if err == nil && done(status, title) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the payment's retries with %s got no answer within 30s: last %d %s (%v)", which, status, title, err)
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
