package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/strand-ledger/strand/bench/rate"
	"github.com/strand-ledger/strand/bench/workload"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/internal/buildinfo"
	"github.com/strand-ledger/strand/localnet"
)

// result assembles the round's Result.
func (l *load) result(ctl rate.Controller, elapsed time.Duration, u Usage) *Result {
	s := l.rec.Snapshot()
	sec := elapsed.Seconds()
	res := &Result{
		Label: l.r.Label, Workload: l.r.Workload, Round: l.r, Rate: ctl.Describe(), Network: "embedded", Measures: measures, Build: buildinfo.Read(),
		Host:     readHost(time.Now().Add(-elapsed)),
		ElapsedS: sec, SendTPS: float64(s.Sent) / sec, ThroughputTPS: float64(s.Committed) / sec,
		GoodputTPS: float64(s.Valid) / sec, EvaluateTPS: float64(s.Evaluated) / sec,
		Result: s, Usage: u, CPUPercent: map[string]float64{}, RSSMB: map[string]float64{},
	}
	if !l.net.Embedded() {
		res.Network = l.net.Dir
	}
	for _, ln := range l.lanes {
		res.Blocks += ln.blocks() // a block number names a block of one channel
	}
	res.Channels = channelResults(l.lanes, sec)
	if len(l.lanes) > 1 {
		res.Workload = workloadNames(l.lanes)
	}
	for _, p := range u.Procs {
		res.CPUPercent[p.Name], res.RSSMB[p.Name] = p.CPUPercent, p.RSSMB
	}
	if m, ok := ctl.(*rate.Maximum); ok {
		res.Steps = m.Steps()
		if k, ok := m.Knee(); ok {
			res.Knee = &k
		}
	}
	// An open-loop rate that was not sent in full: the clients or
	// max_outstanding held it back.
	if want := l.r.Rate.TPS; l.r.Rate.Kind == "fixed-rate" && res.SendTPS < 0.9*want {
		res.Warnings = append(res.Warnings, fmt.Sprintf("sent %.0f tx/s of the %.0f asked: the load generator or max_outstanding held the offered load back", res.SendTPS, want))
	}
	// The load generator was the bottleneck if its process used nearly
	// every core (it shares them with the nodes when they are embedded).
	for _, p := range u.Procs {
		if p.Name == "load generator" || l.net.Embedded() {
			if p.CPUPercent > 90*float64(runtime.NumCPU()) {
				u.Saturated = true
				res.Usage.Saturated = true
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s used %.0f%% CPU of %d cores: the load generator may have been the bottleneck", p.Name, p.CPUPercent, runtime.NumCPU()))
			}
		}
	}
	return res
}

// check runs the correctness checks after the load: every peer reaches
// the same height and state, and for Smallbank the invariant holds.
// Failures go into res.Failures and make the error.
func check(ctx context.Context, res *Result, n *Network, w workload.Workload, orgConns []*localnet.Conn, delta int64) error {
	fail := func(format string, args ...any) { res.Failures = append(res.Failures, fmt.Sprintf(format, args...)) }
	if err := n.AwaitPeers(ctx, 30*time.Second); err != nil {
		fail("%v", err)
	} else if n.Embedded() {
		if h, err := n.CheckStateAgreement(w.Contract()); err != nil {
			fail("%v", err)
		} else {
			res.Checks = append(res.Checks, fmt.Sprintf("all %d peers at height %d with identical state of %s", len(n.Peers), h, w.Contract()))
		}
	} else if err := sameHeights(ctx, orgConns); err != nil {
		fail("%v", err)
	} else {
		res.Checks = append(res.Checks, "every org's peer at the same height")
	}
	if sb, ok := w.(*workload.Smallbank); ok {
		if err := checkSmallbank(ctx, res, sb, orgConns, delta); err != nil {
			fail("%v", err)
		}
	}
	if len(res.Failures) > 0 {
		return fmt.Errorf("%w: round %q: %v", ErrCheckFailed, res.Label, res.Failures)
	}
	return nil
}

// sameHeights waits until every org's peer reports the same height.
func sameHeights(ctx context.Context, conns []*localnet.Conn) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		heights := map[uint64]bool{}
		for _, c := range conns {
			h, err := c.Height(ctx, 100*time.Millisecond)
			if err != nil {
				return err
			}
			heights[h] = true
		}
		if len(heights) == 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the orgs' peers stay at different heights %v", slices.Sorted(maps.Keys(heights)))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkSmallbank queries every account of the round through every org's
// peer: the balances must agree, and the total must be the initial total
// plus the money VALID deposits, savings and checks added.
func checkSmallbank(ctx context.Context, res *Result, w *workload.Smallbank, conns []*localnet.Conn, delta int64) error {
	var total int64
	for attempt := 0; ; attempt++ {
		t, agreed, err := smallbankTotal(ctx, w, conns)
		if err != nil {
			return err
		}
		if agreed {
			total = t
			break
		}
		if attempt == 50 {
			return fmt.Errorf("bench: the orgs' peers answer different Smallbank balances")
		}
		time.Sleep(200 * time.Millisecond) // another org's peer may still be committing the last blocks
	}
	want := w.InitialTotal() + delta
	if total != want {
		return fmt.Errorf("bench: Smallbank invariant BROKEN: total money %d, want %d = initial %d %+d", total, want, w.InitialTotal(), delta)
	}
	res.Checks = append(res.Checks, fmt.Sprintf("Smallbank invariant holds: total %d = initial %d + committed deposits and checks %+d; every org's peer answers the same balance for all %d accounts",
		total, w.InitialTotal(), delta, w.Accounts))
	return nil
}

// checkWorkers is how many accounts smallbankTotal queries at once. One
// at a time, 100,000 accounts through two peers held to 0.4 cores took
// about two and a half minutes, several times the load it checks.
const checkWorkers = 16

// smallbankTotal sums every account's balance as the first org's peer
// answers it, and reports whether every other org's peer answered the
// same bytes. Accounts are queried checkWorkers at a time, each worker a
// contiguous stripe of accounts; the sum does not depend on the order.
func smallbankTotal(ctx context.Context, w *workload.Smallbank, conns []*localnet.Conn) (int64, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The first stripe to fail or to find a disagreement decides the
	// answer and stops the others, whose errors are then only that.
	var (
		once     sync.Once
		firstErr error
		disagree bool
		wg       sync.WaitGroup
	)
	workers := min(checkWorkers, max(w.Accounts, 1))
	totals := make([]int64, workers)
	for k := range workers {
		lo, hi := w.Accounts*k/workers, w.Accounts*(k+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			t, agreed, err := smallbankStripe(ctx, w, conns, lo, hi)
			if err != nil || !agreed {
				once.Do(func() { firstErr, disagree = err, err == nil })
				cancel()
				return
			}
			totals[k] = t
		}()
	}
	wg.Wait()
	if firstErr != nil || disagree {
		return 0, false, firstErr
	}
	var total int64
	for _, t := range totals {
		total += t
	}
	return total, true, nil
}

// smallbankStripe is smallbankTotal for accounts lo to hi-1.
func smallbankStripe(ctx context.Context, w *workload.Smallbank, conns []*localnet.Conn, lo, hi int) (int64, bool, error) {
	var total int64
	for i := lo; i < hi; i++ {
		id := w.AccountID(i)
		var first []byte
		for o, c := range conns {
			raw, err := c.Contract(smallbank.Name).Evaluate(ctx, "query", id)
			if err != nil {
				return 0, false, fmt.Errorf("bench: query account %s through %s: %w", id, c.Client.Org, err)
			}
			if o == 0 {
				first = raw
				var b smallbank.Balance
				if err := json.Unmarshal(raw, &b); err != nil {
					return 0, false, fmt.Errorf("bench: account %s through %s: %w", id, c.Client.Org, err)
				}
				total += b.Checking + b.Savings
			} else if string(raw) != string(first) {
				return 0, false, nil
			}
		}
	}
	return total, true, nil
}
