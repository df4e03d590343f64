package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/bench/rate"
	"github.com/strand-ledger/strand/bench/stats"
	"github.com/strand-ledger/strand/bench/workload"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/energy"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/gopool"
	"github.com/strand-ledger/strand/localnet"
)

// Target is where rounds run.
type Target struct {
	// Net is the directory of a network `strand net up` runs; "" starts
	// an embedded network for each round.
	Net string
	// Keep keeps an embedded network's directory.
	Keep bool
	// Progress, if set, is called about four times a second during the
	// load, from the round's control loop: it must return quickly.
	Progress func(Progress)
	// Log, if set, receives one-line notes (network up, setup done).
	Log func(format string, args ...any)
	// Energy chooses the energy meter (runenergy.go); the zero value is
	// RAPL where the machine has it, else the model.
	Energy energy.Config
	// Command is the strand binary (and any arguments before the
	// subcommand), which rounds with network: processes start their
	// nodes and hogs with.
	Command []string
}

// Progress is the state of a running round.
type Progress struct {
	Label              string
	Elapsed, Duration  time.Duration
	Started, Committed int64
	Completed          int64   // committed, evaluated or failed
	TPS                float64 // completed per second so far
}

func (t Target) logf(format string, args ...any) {
	if t.Log != nil {
		t.Log(format, args...)
	}
}

// runCount makes Env.Run distinct for rounds started within the same
// tenth of a second.
var runCount atomic.Int64

// Run runs one round against the target and checks the network's
// correctness afterwards. A failed check returns the Result and an error
// wrapping ErrCheckFailed.
func Run(ctx context.Context, r Round, t Target) (*Result, error) {
	r.EnsureDefaults()
	embedded := t.Net == ""
	if embedded {
		r.embeddedDefaults()
	}
	if err := r.Validate(embedded); err != nil {
		return nil, err
	}
	run := time.Now().UnixMilli()/100 + runCount.Add(1)
	ws, err := r.channelWorkloads(run, r.Orgs)
	if err != nil {
		return nil, err
	}
	ctl, err := rate.New(r.Rate, r.Duration)
	if err != nil {
		return nil, err
	}
	var n *Network
	opts := r.netOptions(t.Keep)
	opts.Logf = t.logf
	if embedded {
		if opts.Wasm, err = r.wasmModules(); err != nil {
			return nil, err
		}
	}
	var ext *externalServer
	if embedded && r.ContractRuntime == RuntimeExternal {
		if ext, err = startExternal(r.Workload); err != nil {
			return nil, fmt.Errorf("bench: round %q: contract_runtime external: %w", r.Label, err)
		}
		defer ext.Close()
		opts.External = map[string][]byte{externalContracts[r.Workload].name: ext.pkg}
	}
	if embedded && r.Network == "processes" {
		settleMemory()
		start := time.Now()
		if n, err = StartProcesses(opts, t.Command); err != nil {
			return nil, fmt.Errorf("bench: round %q: %w", r.Label, err)
		}
		t.logf("network up in %v: %d node processes (%d memory nodes and %d compute nodes among them), %s mode, %s identities", time.Since(start).Round(time.Millisecond), len(n.Layout.Nodes)+len(n.Layout.Memnodes)+len(n.Layout.Computes), len(n.Layout.Memnodes), len(n.Layout.Computes), r.BatchMode, layoutAlg(n.Layout))
	} else if embedded {
		settleMemory()
		start := time.Now()
		if n, err = StartEmbedded(opts); err != nil {
			return nil, err
		}
		t.logf("network up in %v: 1 orderer, %d peers, %s mode, %s state database, %s contracts, %s identities",
			time.Since(start).Round(time.Millisecond), len(n.Peers), r.BatchMode, stateName(r.StateDB), runtimeName(r.ContractRuntime), layoutAlg(n.Layout))
	} else if n, err = OpenNet(t.Net); err != nil {
		return nil, err
	}
	defer n.Close()
	if ext != nil {
		if err := ext.trust(n.Dir); err != nil {
			return nil, fmt.Errorf("bench: round %q: contract_runtime external: %w", r.Label, err)
		}
	}
	conns, err := n.Connect(r.Clients)
	if err != nil {
		return nil, err
	}
	defer CloseAll(conns)
	orgConns := conns[:min(len(conns), len(n.Layout.Orgs()))]
	if r.multiChannel() && len(orgConns) != r.Orgs { // a --net network's orgs spread the clients
		if ws, err = r.channelWorkloads(run, len(orgConns)); err != nil {
			return nil, err
		}
	}
	lanes, err := r.makeLanes(n, ws, conns, orgConns)
	if err != nil {
		return nil, fmt.Errorf("bench: round %q: %w", r.Label, err)
	}
	if err := setupLanes(ctx, lanes, t.logf); err != nil {
		return nil, fmt.Errorf("bench: round %q: setup: %w", r.Label, err)
	}

	meter, err := openRoundMeter(t.Energy)
	if err != nil {
		return nil, fmt.Errorf("bench: round %q: %w", r.Label, err)
	}
	l := newLoad(r, lanes, n)
	if r.Interference.cgroups() {
		if l.in, err = startInterference(r, n, t.Command, t.logf); err != nil {
			return nil, err
		}
		defer l.in.close()
	}
	tiers, err := watchTiers(r.Disagg, n.Layout)
	if err != nil {
		return nil, fmt.Errorf("bench: round %q: %w", r.Label, err)
	}
	mem0 := n.mem.sample()
	meter.begin(n)
	res := l.run(ctx, ctl, t)
	if n.mem != nil {
		var warns []string
		res.MemoryLimits, warns = n.mem.result(r.Disagg, mem0, n.mem.sample())
		res.Warnings = append(res.Warnings, warns...)
	}
	if tiers != nil {
		if res.Tiers, err = tiers.finish(); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("no tier figures: %v", err))
		}
	}
	if res.Energy, err = meter.end(res); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("no energy figures: %v", err))
	}
	res.Params = ws[0].Params()
	if embedded && t.Keep {
		t.logf("network directory kept: %s", n.Dir)
	}
	if len(lanes) > 1 {
		return res, checkChannels(ctx, res, n, lanes, r.StateDB)
	}
	if err := check(ctx, res, n, ws[0], orgConns, lanes[0].delta.Load()); err != nil {
		return res, err
	}
	return res, nil
}

func stateName(s string) string {
	if s == "" {
		return "pebble"
	}
	return s
}

// runSetup runs the workload's setup stages; each stage's operations are
// spread over the clients, and every org's peer must have committed a
// stage before the next starts (and before the load).
func runSetup(ctx context.Context, w workload.Workload, conns, orgConns []*localnet.Conn) error {
	for _, stage := range w.Setup() {
		ids := make([]string, len(stage))
		errs := make(chan error, len(conns))
		var next atomic.Int64
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1) - 1); i < len(stage); i = int(next.Add(1) - 1) {
					op := stage[i]
					commit, err := submitSetup(ctx, c, op)
					if err != nil {
						errs <- fmt.Errorf("%s.%s: %w", op.Contract, op.Function, err)
						return
					}
					ids[i] = commit.TxID
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
		for _, c := range orgConns {
			for _, id := range ids {
				wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				_, err := c.Gateway.CommitStatus(wctx, id)
				cancel()
				if err != nil {
					return fmt.Errorf("waiting for %s's peer to commit setup transaction %s: %w", c.Client.Org, id, err)
				}
			}
		}
	}
	return nil
}

// setupRetries bounds how often a setup transaction whose endorsement
// timed out is proposed again.
const setupRetries = 5

// submitSetup submits one setup operation, as the load does, and proposes
// it again when its endorsement timed out: setup spreads large
// transactions (Smallbank's create_accounts of MaxCreatedAccounts) over
// every client at once, and on a peer held to a fraction of a core
// (cpu_quota) one of them can outlast the contract's time limit.
// Nothing was ordered then, so a new proposal is safe.
func submitSetup(ctx context.Context, c *localnet.Conn, op workload.Op) (*client.Commit, error) {
	for attempt := 1; ; attempt++ {
		commit, err := c.Contract(op.Contract).SubmitWithRetry(ctx, 10, op.Function, op.Args...)
		if err == nil || attempt == setupRetries || !endorseTimedOut(err) {
			return commit, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Duration(attempt) * time.Second):
		}
	}
}

// endorseTimedOut reports whether err is an endorsement that timed out
// (504 before anything was submitted), not a submission whose commit
// status timed out (which may still commit).
func endorseTimedOut(err error) bool {
	var ee *client.EndorseError
	return errors.As(err, &ee) && ee.Status == http.StatusGatewayTimeout
}

// load is one round's load: the control loop and the clients.
type load struct {
	r     Round
	lanes []*lane // one per channel (channels.go)
	net   *Network
	rec   *stats.Recorder // the round's figures (all channels)
	t0    time.Time
	// done carries the lane of each finished transaction.
	done    chan int
	commits atomic.Int64
	wg      sync.WaitGroup
	// txs runs the transactions on reused goroutines: signing grows a
	// fresh goroutine's stack, 4% of the load generator's CPU.
	txs gopool.Pool
	// phaseWarn says why a --net round has no peer phases ("" if it has).
	phaseWarn string
	// in is the round's hogs, cgroups and controller (nil: none).
	in *interfering
}

func newLoad(r Round, lanes []*lane, n *Network) *load {
	return &load{r: r, lanes: lanes, net: n, rec: stats.NewRecorder(), done: make(chan int, r.MaxOutstanding+1)}
}

// laneFor picks the lane of the next start: under a fixed load the lane
// of a finished transaction (freed, oldest first), so that each channel
// keeps its share of the load; otherwise, and for the first starts, the
// lanes in turn.
func (l *load) laneFor(freed *[]int, turn *int) int {
	if len(*freed) > 0 {
		i := (*freed)[0]
		*freed = (*freed)[1:]
		return i
	}
	i := *turn % len(l.lanes)
	*turn++
	return i
}

// drainWait bounds how long the round waits for outstanding transactions
// after its duration.
const drainWait = 60 * time.Second

func (l *load) run(ctx context.Context, ctl rate.Controller, t Target) *Result {
	watched := l.procs()
	wt := watch(watched)
	l.t0 = time.Now() // before peerPhases' goroutine reads it
	stopEvents := l.peerPhases()
	var inErr error
	if l.in != nil {
		inErr = l.in.begin()
	}
	for li, ln := range l.lanes {
		for i, c := range ln.conns {
			l.wg.Add(1)
			go l.client(ctx, li, c, ln.w.Client(i))
		}
	}
	// freed holds, under a fixed load with several lanes, the lanes of
	// finished transactions whose successors have not started yet.
	follow := l.r.Rate.Kind == "fixed-load" && len(l.lanes) > 1
	var freed []int
	turn := 0
	var c rate.Counts
	laneDone := func(lane int) {
		c.Completed++
		if follow {
			freed = append(freed, lane)
		}
	}
	var heldBack int64
	timer := time.NewTimer(0)
	lastProgress := time.Time{}
loop:
	for {
		el := time.Since(l.t0)
		if el >= l.r.Duration || ctx.Err() != nil {
			break
		}
		d := ctl.Poll(el, c)
		start := d.Start
		if room := int64(l.r.MaxOutstanding) - c.Outstanding(); int64(start) > room {
			heldBack++
			start = int(max(room, 0))
		}
		now := time.Now()
		for range start {
			l.lanes[l.laneFor(&freed, &turn)].tokens <- now
			c.Started++
		}
		if t.Progress != nil && now.Sub(lastProgress) >= 250*time.Millisecond {
			lastProgress = now
			t.Progress(Progress{Label: l.r.Label, Elapsed: el, Duration: l.r.Duration, Started: c.Started,
				Committed: l.commits.Load(), Completed: c.Completed, TPS: float64(c.Completed) / max(el.Seconds(), 1e-3)})
		}
		wait := l.r.Duration - el
		if d.Wait > 0 {
			wait = min(wait, d.Wait)
		}
		if wait > 250*time.Millisecond {
			wait = 250 * time.Millisecond // keep the progress line moving
		}
		timer.Reset(wait)
		select {
		case ln := <-l.done:
			laneDone(ln)
			for drained := false; !drained; {
				select {
				case ln := <-l.done:
					laneDone(ln)
				default:
					drained = true
				}
			}
			timer.Stop() // Go ≥ 1.23: Reset never delivers a stale tick, so no drain
		case <-timer.C:
		case <-ctx.Done():
			break loop
		}
	}
	for _, ln := range l.lanes {
		close(ln.tokens)
	}
	var iso *IsolationResult
	if l.in != nil && inErr == nil {
		iso, inErr = l.in.end()
	}
	finished := make(chan struct{})
	go func() { l.wg.Wait(); close(finished) }()
	var warnings []string
	select {
	case <-finished:
	case <-time.After(drainWait):
		warnings = append(warnings, fmt.Sprintf("%d transactions still outstanding %v after the round; not counted", c.Outstanding(), drainWait))
	}
	elapsed := time.Since(l.t0)
	if l.in != nil {
		// The quotas held through the drain (interfering's step 5).
		if err := l.in.close(); err != nil {
			warnings = append(warnings, fmt.Sprintf("removing the round's cgroups: %v", err))
		}
	}
	stopEvents()
	usage := wt.finish()
	res := l.result(ctl, elapsed, usage)
	res.Isolation = iso
	if inErr != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("hogs or controller: %v", inErr))
	}
	if heldBack > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the rate asked for more than max_outstanding (%d) transactions in flight %d times: the network did not absorb the offered load", l.r.MaxOutstanding, heldBack))
	}
	res.Warnings = append(res.Warnings, warnings...)
	if l.phaseWarn != "" {
		res.Warnings = append(res.Warnings, l.phaseWarn)
	}
	return res
}

// procs are the processes whose resources a round reports.
func (l *load) procs() []Proc {
	if l.net.Embedded() {
		return []Proc{{Name: "strand (nodes and clients, one process)", PID: 0}}
	}
	var ps []Proc
	for _, p := range localnet.Status(l.net.Layout) {
		if p.Alive {
			ps = append(ps, Proc{Name: p.Name, PID: p.PID})
		}
	}
	return append(ps, Proc{Name: "load generator", PID: 0})
}

// peerPhases records the pipeline stages of the first peer's blocks
// during the round; the returned func stops it. An embedded peer reports
// each block; a --net peer's are read from its metrics (scrapedPhases).
//
// Clients count a commit when their own org's peer commits it, which
// may be before the first peer does: stop therefore records until the
// first peer has committed every block some peer had when the round
// ended (or peerCatchUp passes), so no committed block's stages are lost.
func (l *load) peerPhases() (stop func()) {
	if !l.net.Embedded() {
		return l.scrapedPhases()
	}
	if len(l.net.Peers) == 0 {
		return func() {}
	}
	first := l.net.Peers[0].Committer
	sub := first.Subscribe(1 << 14)
	seen := first.Height()       // every block at or above it is published to sub
	quit := make(chan uint64, 1) // the height to reach before returning
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		record := func(ev committer.BlockEvent) { // the first peer's blocks
			n := len(ev.TxIDs)
			if n == 0 || ev.Received.Before(l.t0) {
				return
			}
			l.rec.Phase("verify", ev.Verified.Sub(ev.Received), n)
			l.rec.Phase("validate", ev.Validated.Sub(ev.Verified), n)
			l.rec.Phase("persist", ev.Committed.Sub(ev.Validated), n)
		}
		var until uint64
		var deadline <-chan time.Time
		for {
			select {
			case until = <-quit:
				if seen >= until {
					return
				}
				deadline = time.After(peerCatchUp)
				quit = nil
			case <-deadline:
				l.phaseWarn = fmt.Sprintf("peer stages: the first peer did not reach height %d within %v of the round's end; its later blocks' stages are not counted", until, peerCatchUp)
				return
			case ev, ok := <-sub.C:
				if !ok {
					return
				}
				record(ev)
				seen = max(seen, ev.Number+1)
				if quit == nil && seen >= until {
					return
				}
			}
		}
	}()
	return func() {
		var top uint64
		for _, p := range l.net.Peers {
			top = max(top, p.Committer.Height())
		}
		quit <- top
		wg.Wait()
		sub.Close()
	}
}

// peerCatchUp bounds how long a round's end waits for the first peer to
// commit what other peers already have.
const peerCatchUp = 10 * time.Second

// client runs one client: it takes a token per transaction, draws the
// operation (the generator is this goroutine's alone) and runs it
// concurrently, so that an open-loop rate is not bounded by the clients.
func (l *load) client(ctx context.Context, lane int, c *localnet.Conn, g workload.Generator) {
	defer l.wg.Done()
	ln := l.lanes[lane]
	for intended := range ln.tokens {
		op := g.Next()
		l.wg.Add(1)
		l.txs.Go(func() {
			defer l.wg.Done()
			l.exec(ctx, ln, c, op, intended)
			l.done <- lane
		})
	}
}

// recorders are where a transaction of lane ln is recorded: the round's
// recorder, and the lane's own when the round has several.
func (l *load) recorders(ln *lane) []*stats.Recorder {
	if ln.rec == nil {
		return []*stats.Recorder{l.rec}
	}
	return []*stats.Recorder{l.rec, ln.rec}
}

// exec runs one operation of lane ln and records it.
func (l *load) exec(ctx context.Context, ln *lane, c *localnet.Conn, op workload.Op, intended time.Time) {
	recs := l.recorders(ln)
	at := intended.Sub(l.t0)
	for _, rec := range recs {
		rec.Sent(at)
	}
	failed := func(class string, err error) {
		for _, rec := range recs {
			rec.Failed(at, class, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, drainWait)
	defer cancel()
	ct := c.Contract(op.Contract)
	if !op.Submit {
		_, err := ct.Evaluate(ctx, op.Function, op.Args...)
		if err != nil {
			failed(errorClass("evaluate", err), err)
			return
		}
		end, lat := time.Since(l.t0), time.Since(intended)
		for _, rec := range recs {
			rec.Evaluated(end, lat)
		}
		return
	}
	tx, err := ct.Endorse(ctx, op.Function, op.Args...)
	tEndorsed := time.Now()
	if err != nil {
		failed(errorClass("endorse", err), err)
		return
	}
	// One call: the gateway answers once the transaction is committed on
	// its peer, and says when the orderer admitted it.
	commit, err := tx.SubmitAndWait(ctx)
	var ce *client.CommitError
	var se *client.SubmitError
	var code string
	var block uint64
	switch {
	case errors.As(err, &ce):
		code, block = ce.Code.String(), ce.Block
	case errors.As(err, &se) && se.Status == http.StatusGatewayTimeout:
		failed(errorClass("commit", err), err)
		return
	case err != nil:
		failed(errorClass("submit", err), err)
		return
	default:
		code, block = commit.Code.String(), commit.Block
	}
	end := time.Now()
	// The gateway's word, kept within the call it describes.
	tSubmitted := tEndorsed.Add(min(max(commit.Admitted, 0), end.Sub(tEndorsed)))
	ln.mu.Lock()
	ln.mu.blocks[block] = struct{}{}
	ln.mu.Unlock()
	if code == "VALID" {
		ln.delta.Add(op.Delta)
		if op.Debit {
			ln.delta.Add(-op.Delta - debited(commit))
		}
	}
	l.commits.Add(1)
	phases := map[string]time.Duration{
		"endorse": tEndorsed.Sub(intended), "submit": tSubmitted.Sub(tEndorsed), "commit": end.Sub(tSubmitted)}
	for _, rec := range recs {
		rec.Committed(end.Sub(l.t0), code, end.Sub(intended), phases)
	}
}

// errorClass groups errors by step and status: "endorse 404", "submit 429".
func errorClass(step string, err error) string {
	var ee *client.EndorseError
	var se *client.SubmitError
	switch {
	case errors.As(err, &ee):
		return fmt.Sprintf("%s %d", step, ee.Status)
	case errors.As(err, &se):
		return fmt.Sprintf("%s %d", step, se.Status)
	case errors.Is(err, context.DeadlineExceeded):
		return step + " timeout"
	}
	return step + " error"
}

// debited reads the money a VALID Debit operation took from its result;
// -1 (an impossible amount, which makes the invariant check fail loudly)
// if the result is not a decimal number.
func debited(c *client.Commit) int64 {
	if c == nil {
		return -1
	}
	n, err := strconv.ParseInt(string(c.Result), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// scrapedPhases reads the first peer's stage histograms from its metrics
// endpoint now and when stopped, and records the difference. A network
// without metrics gives no peer phases; a peer that does not answer, a
// warning in the round's results.
func (l *load) scrapedPhases() (stop func()) {
	var addr string
	for _, n := range l.net.Layout.Nodes {
		if n.Role == identity.RolePeer && n.Metrics != "" {
			addr = n.Metrics
			break
		}
	}
	if addr == "" {
		return func() {}
	}
	before, err := scrapeStages(addr)
	if err != nil {
		l.phaseWarn = fmt.Sprintf("no peer phases: %v", err)
		return func() {}
	}
	return func() {
		after, err := scrapeStages(addr)
		if err != nil {
			l.phaseWarn = fmt.Sprintf("no peer phases: %v", err)
			return
		}
		stagePhases(before, after, func(phase string, d time.Duration, n int) { l.rec.Phase(phase, d, n) })
	}
}

// settleMemory returns the memory of earlier rounds' networks to the
// system, so that each round's RSS and heap growth are its own. A closed
// network's memory can stay reachable for a moment after Close returns
// (its last goroutines finishing; up to 2 s seen after a 64 KB round of
// the in-memory backend), and a round that starts meanwhile inherits a
// heap goal of GOGC times that memory: in the state-DB study the round
// after each memory-checkpoint round peaked at up to 6 GiB and ran up to
// 30% slower. So it collects every 100 ms until the heap is small, for at
// most settleFor.
func settleMemory() {
	const small = 64 << 20
	var ms runtime.MemStats
	for deadline := time.Now().Add(settleFor); ; time.Sleep(100 * time.Millisecond) {
		debug.FreeOSMemory()
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse < small || time.Now().After(deadline) {
			return
		}
	}
}

// settleFor bounds settleMemory's wait.
const settleFor = 5 * time.Second

// layoutAlg names the signature algorithm of a network's identities, as
// its CA certificates say (what a round's alg asked for, checked).
func layoutAlg(l *localnet.Layout) string {
	a, err := l.Alg()
	if err != nil {
		return fmt.Sprintf("unknown (%v)", err)
	}
	return a.String()
}
