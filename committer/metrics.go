package committer

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/internal/latency"
)

// Metrics is a snapshot of the pipeline's counters. Durations are sums
// over blocks (Stage*) or groups (Store, Apply); divide by Blocks or Groups.
type Metrics struct {
	Height    uint64
	Blocks    uint64
	Txs       uint64
	Groups    uint64 // group commits, i.e. block store fsyncs
	Refused   uint64 // blocks refused whole
	Recovered uint64 // blocks re-applied to the state on start and after a lost state
	// StateWaits counts retries while the state database was unavailable;
	// StateLosses the times it had lost state (a memory node restarted).
	StateWaits, StateLosses uint64
	// Signed is the number of the newest block whose orderer signature
	// was verified, plus one: every block below it is vouched for by a
	// signature through the hash chain. On a channel that signs every
	// block it follows Height; on one that signs checkpoints, Height
	// minus Signed blocks rest on the orderer connection's TLS alone.
	Signed uint64
	ByCode map[string]uint64
	// DefinitionsRefused counts contract definition transactions that
	// did not take effect, by reason (Refused* in lifecycle.go).
	DefinitionsRefused map[string]uint64

	Stage1 time.Duration // receive → verified
	Stage2 time.Duration // verified → validated (includes waiting for earlier blocks)
	Stage3 time.Duration // validated → committed (includes waiting for the group)
	Store  time.Duration // block store append incl. fsync
	Apply  time.Duration // state batch apply

	// Per-block latency of each stage, as histograms (same spans as
	// Stage1..Stage3).
	VerifyLatency, ValidateLatency, CommitLatency latency.Snapshot

	// Busy is the time each stage (indexed by Stage) spent working, its
	// overlapping intervals counted once: wall time, not CPU time, and
	// without the queueing in Stage1..Stage3.
	Busy [numStages]time.Duration
	// PipelineBusy is the time at least one stage was working: the union
	// of all stages' intervals, a block verified while the one before it
	// is persisted counted once. The energy bench charges a peer's
	// busy periods over it.
	PipelineBusy time.Duration

	// RemoteTxs counts transactions whose signatures a compute node
	// checked for stage 1 (remote.go); RemoteFailed its requests that
	// failed or timed out, whose transactions were checked here; Remotes
	// the compute nodes stage 1 asks now.
	RemoteTxs, RemoteFailed uint64
	Remotes                 int

	QueuedVerify   int // stage-1 jobs waiting
	QueuedValidate int // blocks waiting for stage 2
	QueuedPersist  int // blocks waiting for stage 3
	OverlayKeys    int // unpersisted keys held in memory
}

func avg(d time.Duration, n uint64) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

// String renders the snapshot for logs and the CLI.
func (m Metrics) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "height %d (signed up to %d), %d blocks, %d txs, %d groups (%.1f blocks/fsync), %d refused, %d recovered\n",
		m.Height, m.Signed, m.Blocks, m.Txs, m.Groups, float64(m.Blocks)/float64(max(m.Groups, 1)), m.Refused, m.Recovered)
	fmt.Fprintf(&b, "avg per block: verify %v, validate %v, commit %v; per group: store %v, apply %v\n",
		avg(m.Stage1, m.Blocks), avg(m.Stage2, m.Blocks), avg(m.Stage3, m.Blocks), avg(m.Store, m.Groups), avg(m.Apply, m.Groups))
	fmt.Fprintf(&b, "busy: receive %v, verify %v, validate %v, persist %v, any stage %v\n",
		m.Busy[StageReceive], m.Busy[StageVerify], m.Busy[StageValidate], m.Busy[StagePersist], m.PipelineBusy)
	fmt.Fprintf(&b, "queued: verify %d, validate %d, persist %d; overlay %d keys\n",
		m.QueuedVerify, m.QueuedValidate, m.QueuedPersist, m.OverlayKeys)
	codes := make([]string, 0, len(m.ByCode))
	for k := range m.ByCode {
		codes = append(codes, k)
	}
	sort.Strings(codes)
	for _, k := range codes {
		fmt.Fprintf(&b, "  %-28s %d\n", k, m.ByCode[k])
	}
	return b.String()
}

type metrics struct {
	refused   atomic.Uint64
	recovered atomic.Uint64
	// stateWaits counts retries of an unavailable state database,
	// stateLosses the times it was found to have lost state.
	stateWaits, stateLosses atomic.Uint64
	signed                  atomic.Uint64 // the newest block with a verified orderer signature, plus one
	remoteTxs, remoteFailed atomic.Uint64 // remote.go

	mu     sync.Mutex
	blocks uint64
	txs    uint64
	groups uint64
	byCode [256]uint64
	defs   map[string]uint64 // refused definitions by reason
	stage1 time.Duration
	stage2 time.Duration
	stage3 time.Duration
	store  time.Duration
	apply  time.Duration

	verifyLat, validateLat, commitLat latency.Histogram

	busy     [numStages]busyClock
	pipeline busyClock // the union over stages
}

func (m *metrics) group(g []*persistWork, start, stored, done time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groups++
	m.store += stored.Sub(start)
	m.apply += done.Sub(stored)
	for _, p := range g {
		m.blocks++
		m.txs += uint64(len(p.codes))
		for _, c := range p.codes {
			m.byCode[c]++
		}
		m.stage1 += p.verified.Sub(p.received)
		m.stage2 += p.validated.Sub(p.verified)
		m.stage3 += done.Sub(p.validated)
		m.verifyLat.Record(p.verified.Sub(p.received))
		m.validateLat.Record(p.validated.Sub(p.verified))
		m.commitLat.Record(done.Sub(p.validated))
	}
}

// refusedDefinitions counts the block's refused definition transactions
// by reason, once their codes are final (after stage 2's MVCC, which a
// definition, reading nothing, always passes).
func (m *metrics) refusedDefinitions(results []txResult, txs []txWork) {
	for i := range txs {
		why := refusedDefinition(results[i], txs[i].code)
		if why == "" {
			continue
		}
		m.mu.Lock()
		if m.defs == nil {
			m.defs = map[string]uint64{}
		}
		m.defs[why]++
		m.mu.Unlock()
	}
}

// Metrics returns a snapshot.
func (c *Committer) Metrics() Metrics {
	m := &c.metrics
	m.mu.Lock()
	out := Metrics{
		Height: c.Height(), Blocks: m.blocks, Txs: m.txs, Groups: m.groups,
		Stage1: m.stage1, Stage2: m.stage2, Stage3: m.stage3, Store: m.store, Apply: m.apply,
		ByCode: map[string]uint64{}, DefinitionsRefused: maps.Clone(m.defs),
	}
	for code, n := range m.byCode {
		if n > 0 {
			out.ByCode[api.TxValidationCode(code).String()] = n
		}
	}
	m.mu.Unlock()
	out.VerifyLatency, out.ValidateLatency, out.CommitLatency = m.verifyLat.Snapshot(), m.validateLat.Snapshot(), m.commitLat.Snapshot()
	out.Refused, out.Recovered, out.Signed = m.refused.Load(), m.recovered.Load(), m.signed.Load()
	out.StateWaits, out.StateLosses = m.stateWaits.Load(), m.stateLosses.Load()
	out.RemoteTxs, out.RemoteFailed = m.remoteTxs.Load(), m.remoteFailed.Load()
	c.remote.mu.Lock()
	out.Remotes = c.remote.n
	c.remote.mu.Unlock()
	out.QueuedVerify, out.QueuedValidate, out.QueuedPersist = len(c.jobs)+len(c.remoteJobs), len(c.ordered), len(c.persist)
	out.OverlayKeys = c.view.size()
	for s := range out.Busy {
		out.Busy[s] = m.busy[s].read()
	}
	out.PipelineBusy = m.pipeline.read()
	return out
}

// sawSignature records that block n's orderer signature verified.
func (m *metrics) sawSignature(n uint64) {
	for {
		cur := m.signed.Load()
		if n+1 <= cur || m.signed.CompareAndSwap(cur, n+1) {
			return
		}
	}
}
