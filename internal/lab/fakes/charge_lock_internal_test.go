package fakes

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fake gateway stands for money that cannot be taken back, so of any
// number of concurrent charges with one Idempotency-Key exactly one may
// charge. That holds only if the key's look-up and the stored answer happen
// under one hold of the gateway's lock: with a look-up under one hold and the
// store under another, every request that looks the key up before the first
// one stores it charges too.
//
// Goroutines that merely start together rarely hit that window, so the test
// makes the interleaving certain. It holds the gateway's lock while the
// charges queue on it, then hands the lock on with the mutex in starvation
// mode, where each Unlock passes the lock to the oldest waiter: all the
// queued look-ups then run before any request can come back for a second
// hold, and a split look-up and store lets every one of them charge.
func TestConcurrentChargesWithOneKeyChargeOnce(t *testing.T) {
	t.Parallel()
	const rounds, racers = 5, 8
	for round := range rounds {
		g := NewGateway(GatewayConfig{})
		key := "key-" + string(rune('a'+round))
		req := chargeRequest{OrderID: "o1", AmountCents: 100, Currency: "BRL"}

		g.mu.Lock()
		var wg sync.WaitGroup
		replayed := make(chan bool, racers)
		for range racers {
			wg.Go(func() {
				_, r, err := g.charge(key, req)
				if err != nil {
					t.Errorf("charge: %v", err)
				}
				replayed <- r
			})
		}
		waitQueuedOnLock(t, "(*Gateway).charge", racers)
		// A waiter woken after more than 1ms that finds the lock taken puts
		// the mutex in starvation mode: wake one, take the lock back at once
		// (the woken goroutine is not running yet), let it find it taken.
		time.Sleep(5 * time.Millisecond)
		g.mu.Unlock()
		g.mu.Lock()
		time.Sleep(5 * time.Millisecond)
		g.mu.Unlock()
		wg.Wait()
		close(replayed)

		fresh := 0
		for r := range replayed {
			if !r {
				fresh++
			}
		}
		if charges := len(g.Charges()); charges != 1 || fresh != 1 {
			t.Fatalf("round %d: %d concurrent requests with one key made %d charges (%d answers not replayed), want 1 and 1",
				round+1, racers, charges, fresh)
		}
		g.Close()
	}
}

// waitQueuedOnLock waits until n goroutines whose stack contains fn are
// blocked acquiring a sync.Mutex.
func waitQueuedOnLock(t *testing.T, fn string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	buf := make([]byte, 1<<20)
	for {
		stacks := string(buf[:runtime.Stack(buf, true)])
		queued := 0
		for _, g := range strings.Split(stacks, "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(header, "[sync.Mutex.Lock") && strings.Contains(g, fn) {
				queued++
			}
		}
		if queued >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 5s %d goroutine(s) in %s wait for the lock, want %d", queued, fn, n)
		}
		time.Sleep(time.Millisecond)
	}
}
