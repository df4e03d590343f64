package bench

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/bench/stats"
	"github.com/strand-ledger/strand/bench/workload"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// A round with Channels > 1 drives several channels of one network at
// once (FlexChain's Fig. 6: a compute-heavy, a data-heavy and a mixed
// contract side by side). The network the round starts serves Channels
// channels, demo, demo2, demo3 ... (localnet.Spec.Channels, `strand net
// up --channels N`); a --net network must serve at least that many.
//
// Each channel is a lane: its own workload (ChannelWorkloads[i], else
// the round's), set up on that channel, its share of the clients and its
// own figures, beside the round's aggregate. One rate controller drives
// the whole round; its starts go to the lanes in turn, except that under
// a fixed load a completed transaction's successor starts on the same
// channel, so each channel keeps its share of the load outstanding
// however fast it is. The checks run per channel: every org's peer at
// the same height, the Smallbank invariant with that channel's money,
// and, on a network the round started, every peer's state database of
// the channel, read from disk once the nodes are stopped, identical
// (savepoint, keys, values and versions).

// maxChannels bounds a round's channels.
const maxChannels = 16

// ChannelWorkload is the workload of one channel of a round with several.
type ChannelWorkload struct {
	Workload string            `yaml:"workload" json:"workload"`
	Params   map[string]string `yaml:"params,omitempty" json:"params,omitempty"`
}

// ChannelResult is what one channel of a round with several measured;
// the Result around it holds the aggregate.
type ChannelResult struct {
	Channel       string            `json:"channel"`
	Workload      string            `json:"workload"`
	Params        map[string]string `json:"params"`
	Clients       int               `json:"clients"`
	SendTPS       float64           `json:"send_tps"`
	ThroughputTPS float64           `json:"throughput_tps"`
	GoodputTPS    float64           `json:"goodput_tps"`
	EvaluateTPS   float64           `json:"evaluate_tps"`
	Blocks        int               `json:"blocks"`
	stats.Result
	Checks   []string `json:"checks"`
	Failures []string `json:"failures,omitempty"`
}

// Passed reports whether every check of the channel passed.
func (c *ChannelResult) Passed() bool { return len(c.Failures) == 0 }

// channelDefaults sets Channels from ChannelWorkloads when only they are
// given.
func (r *Round) channelDefaults() {
	if r.Channels == 0 && len(r.ChannelWorkloads) > 0 {
		r.Channels = len(r.ChannelWorkloads)
	}
}

// multiChannel reports whether the round drives several channels.
func (r *Round) multiChannel() bool { return r.Channels > 1 }

// validateChannels checks the channel fields (bad names the field).
func (r *Round) validateChannels(embedded bool, bad func(field string, v any, want string) error) error {
	switch {
	case r.Channels < 0 || r.Channels > maxChannels:
		return bad("channels", r.Channels, fmt.Sprintf("1 to %d (0 means 1)", maxChannels))
	case len(r.ChannelWorkloads) > max(r.Channels, 1):
		return bad("channel_workloads", fmt.Sprintf("%d entries", len(r.ChannelWorkloads)), fmt.Sprintf("at most channels (%d): one per channel, in channel order", r.Channels))
	}
	for i, cw := range r.ChannelWorkloads {
		if !slices.Contains(workload.Names(), cw.Workload) {
			return bad(fmt.Sprintf("channel_workloads[%d].workload", i), fmt.Sprintf("%q", cw.Workload), "one of "+strings.Join(workload.Names(), ", "))
		}
	}
	if !r.multiChannel() {
		return nil
	}
	switch {
	case r.Clients < r.Channels:
		return bad("clients", r.Clients, fmt.Sprintf("at least channels (%d): every channel needs a client", r.Channels))
	case r.Rate.Kind == "fixed-load" && r.Rate.Load < r.Channels:
		return bad("rate.load", r.Rate.Load, fmt.Sprintf("at least channels (%d): every channel needs a transaction outstanding", r.Channels))
	case !embedded:
		return nil
	case r.ContractRuntime != "" && r.ContractRuntime != RuntimeBuiltin:
		return bad("contract_runtime", fmt.Sprintf("%q", r.ContractRuntime), "builtin with channels > 1")
	case r.Memnodes || r.ComputeNodes > 0:
		return bad("memnodes", r.Memnodes, "false with channels > 1 (a memory node keeps one channel's state; no compute nodes either)")
	case r.StateDB != "" && !backend.Persistent(r.StateDB):
		return bad("state_db", fmt.Sprintf("%q", r.StateDB), "a database on disk with channels > 1: the per-channel state check reads each peer's state after the round")
	}
	return nil
}

// lane is one channel's share of a round: its workload, its clients and
// its figures. A round of one channel has one lane, whose figures are the
// round's.
type lane struct {
	channel  string // "" in a round of one channel: the network's first
	w        workload.Workload
	conns    []*localnet.Conn // the lane's clients (not to be closed: the round's connections are)
	orgConns []*localnet.Conn // one per org, addressing the lane's channel
	rec      *stats.Recorder  // the lane's own figures; nil in a round of one channel
	tokens   chan time.Time
	delta    atomic.Int64 // money VALID Smallbank transactions added
	mu       struct {
		sync.Mutex
		blocks map[uint64]struct{} // blocks holding the lane's committed transactions
	}
}

func newLane(channel string, w workload.Workload, conns, orgConns []*localnet.Conn, own bool, tokens int) *lane {
	ln := &lane{channel: channel, w: w, conns: conns, orgConns: orgConns, tokens: make(chan time.Time, tokens)}
	if own {
		ln.rec = stats.NewRecorder()
	}
	ln.mu.blocks = map[uint64]struct{}{}
	return ln
}

func (ln *lane) blocks() int {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return len(ln.mu.blocks)
}

// channelWorkloads builds each channel's workload: ChannelWorkloads[i],
// else the round's. Channel i's clients are counted by laneOf over the
// network's orgs; its seed
// is the round's plus i, so that channels running the same workload do
// not send the same operations.
func (r *Round) channelWorkloads(run int64, orgs int) ([]workload.Workload, error) {
	n := max(r.Channels, 1)
	ws := make([]workload.Workload, n)
	for i := range n {
		name, params := r.Workload, r.Params
		if i < len(r.ChannelWorkloads) {
			name, params = r.ChannelWorkloads[i].Workload, r.ChannelWorkloads[i].Params
		}
		clients := 0
		for j := range r.Clients {
			if laneOf(j, n, orgs) == i {
				clients++
			}
		}
		if n == 1 {
			clients = r.Clients
		}
		w, err := workload.New(name, params, workload.Env{Run: run, Clients: clients, Seed: r.Seed + uint64(i)})
		if err != nil {
			if n == 1 {
				return nil, fmt.Errorf("bench: round %q: %w", r.Label, err)
			}
			return nil, fmt.Errorf("bench: round %q: channel %d: %w", r.Label, i+1, err)
		}
		ws[i] = w
	}
	return ws, nil
}

// laneOf is the channel of client j (of orgs orgs; 0 counts as 1) among n:
// the first n clients one to each channel, and each channel's clients
// spread over the orgs (client j is of org j mod orgs, Network.Connect).
func laneOf(j, n, orgs int) int {
	if n <= 1 {
		return 0
	}
	l := lcm(n, max(orgs, 1))
	return (j + j/l) % n
}

func lcm(a, b int) int {
	g, x := a, b
	for x != 0 {
		g, x = x, g%x
	}
	return a / g * b
}

// channelIDs are the ids of the network's first n channels: its channel,
// then those AddChannel added, in order.
func (n *Network) channelIDs(count int) ([]string, error) {
	files := append([]string{n.Layout.Channel}, n.Layout.Channels...)
	if len(files) < count {
		return nil, fmt.Errorf("bench: the network in %s serves %d channel(s): want at least %d for channels: %d (strand net up --channels %d)", n.Dir, len(files), count, count, count)
	}
	ids := make([]string, count)
	for i := range count {
		ch, err := node.LoadChannel(files[i])
		if err != nil {
			return nil, err
		}
		ids[i] = ch.Channel
	}
	return ids, nil
}

// makeLanes spreads the round's clients over its channels (laneOf).
func (r *Round) makeLanes(n *Network, ws []workload.Workload, conns, orgConns []*localnet.Conn) ([]*lane, error) {
	if len(ws) == 1 {
		return []*lane{newLane("", ws[0], conns, orgConns, false, r.MaxOutstanding)}, nil
	}
	ids, err := n.channelIDs(len(ws))
	if err != nil {
		return nil, err
	}
	orgs := len(orgConns)
	lanes := make([]*lane, len(ws))
	for i, id := range ids {
		var oc []*localnet.Conn
		for _, c := range orgConns {
			oc = append(oc, c.OnChannel(id))
		}
		lanes[i] = newLane(id, ws[i], nil, oc, true, r.MaxOutstanding)
	}
	for j, c := range conns {
		ln := lanes[laneOf(j, len(ws), orgs)]
		ln.conns = append(ln.conns, c.OnChannel(ln.channel))
	}
	return lanes, nil
}

// setupLanes runs every lane's setup, the lanes at once.
func setupLanes(ctx context.Context, lanes []*lane, logf func(string, ...any)) error {
	errs := make([]error, len(lanes))
	var wg sync.WaitGroup
	for i, ln := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := runSetup(ctx, ln.w, ln.conns, ln.orgConns); err != nil {
				errs[i] = err
				if ln.channel != "" {
					errs[i] = fmt.Errorf("channel %s: %w", ln.channel, err)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for _, ln := range lanes {
		note := "setup of " + ln.w.Name() + " done"
		if sum, ok := ln.w.(workload.SetupSummarizer); ok {
			note = sum.SetupSummary()
		}
		if ln.channel != "" {
			note = "channel " + ln.channel + ": " + note
		}
		logf("%s", note)
	}
	return nil
}

// channelResults are the lanes' figures over elapsed seconds.
func channelResults(lanes []*lane, sec float64) []ChannelResult {
	if len(lanes) < 2 {
		return nil
	}
	out := make([]ChannelResult, len(lanes))
	for i, ln := range lanes {
		s := ln.rec.Snapshot()
		out[i] = ChannelResult{Channel: ln.channel, Workload: ln.w.Name(), Params: ln.w.Params(), Clients: len(ln.conns),
			SendTPS: float64(s.Sent) / sec, ThroughputTPS: float64(s.Committed) / sec, GoodputTPS: float64(s.Valid) / sec,
			EvaluateTPS: float64(s.Evaluated) / sec, Blocks: ln.blocks(), Result: s, Checks: []string{}}
	}
	return out
}

// workloadNames names the lanes' workloads, each once, in channel order.
func workloadNames(lanes []*lane) string {
	var names []string
	for _, ln := range lanes {
		if !slices.Contains(names, ln.w.Name()) {
			names = append(names, ln.w.Name())
		}
	}
	return strings.Join(names, "+")
}

// checkChannels is check for a round of several channels: per channel,
// every org's peer at the same height and the Smallbank invariant; then,
// on a network the round started, it stops the nodes and compares every
// peer's state of each channel (stateAgreement). A channel's failures go
// into its ChannelResult and, named, into the round's.
func checkChannels(ctx context.Context, res *Result, n *Network, lanes []*lane, stateDB string) error {
	for i, ln := range lanes {
		cr := &res.Channels[i]
		fail := func(format string, args ...any) { cr.Failures = append(cr.Failures, fmt.Sprintf(format, args...)) }
		if err := sameHeights(ctx, ln.orgConns); err != nil {
			fail("%v", err)
		} else {
			cr.Checks = append(cr.Checks, "every org's peer at the same height")
		}
		if sb, ok := ln.w.(*workload.Smallbank); ok {
			tmp := &Result{}
			if err := checkSmallbank(ctx, tmp, sb, ln.orgConns, ln.delta.Load()); err != nil {
				fail("%v", err)
			}
			cr.Checks = append(cr.Checks, tmp.Checks...)
		}
	}
	if n.owned {
		n.stop()
		ids := make([]string, len(lanes))
		for i, ln := range lanes {
			ids[i] = ln.channel
		}
		agreed, err := stateAgreement(n.Layout, ids, stateDB)
		for i := range lanes {
			cr := &res.Channels[i]
			switch {
			case err != nil:
				cr.Failures = append(cr.Failures, err.Error())
			case !agreed[i].same:
				cr.Failures = append(cr.Failures, agreed[i].line)
			default:
				cr.Checks = append(cr.Checks, agreed[i].line)
			}
		}
	}
	for _, cr := range res.Channels {
		for _, c := range cr.Checks {
			res.Checks = append(res.Checks, "channel "+cr.Channel+": "+c)
		}
		for _, f := range cr.Failures {
			res.Failures = append(res.Failures, "channel "+cr.Channel+": "+f)
		}
	}
	if len(res.Failures) > 0 {
		return fmt.Errorf("%w: round %q: %v", ErrCheckFailed, res.Label, res.Failures)
	}
	return nil
}

// stateAgreement opens every peer's state database of each channel in
// ids, with the nodes stopped, and hashes it whole (savepoint, and every
// namespace's keys, values and versions). Per channel it returns the
// check's line: the peers' common savepoint, key count and hash, or what
// each peer holds.
func stateAgreement(l *localnet.Layout, ids []string, stateDB string) ([]agreement, error) {
	type peer struct {
		name string
		cfg  *node.NodeConfig
	}
	var peers []peer
	for _, nd := range l.Nodes {
		if nd.Role != identity.RolePeer {
			continue
		}
		cfg, err := node.LoadNode(nd.Config)
		if err != nil {
			return nil, err
		}
		peers = append(peers, peer{nd.Name, cfg})
	}
	out := make([]agreement, len(ids))
	for i, id := range ids {
		got := map[string][]string{}
		for _, p := range peers {
			s, err := dumpHash(p.cfg, id, stateDB)
			if err != nil {
				return nil, fmt.Errorf("bench: %s's state of channel %s: %w", p.name, id, err)
			}
			got[s] = append(got[s], p.name)
		}
		if len(got) == 1 {
			for s := range got {
				out[i] = agreement{true, fmt.Sprintf("all %d peers hold the same state: %s", len(peers), s)}
			}
			continue
		}
		var parts []string
		for _, s := range slices.Sorted(maps.Keys(got)) {
			parts = append(parts, strings.Join(got[s], ", ")+": "+s)
		}
		out[i] = agreement{false, "the peers hold different states: " + strings.Join(parts, "; ")}
	}
	return out, nil
}

// agreement is one channel's state check.
type agreement struct {
	same bool
	line string
}

// dumpHash hashes a stopped peer's state of channel id. A peer with
// `channels` keeps channel X's state in dataDir/channels/X/state, one
// with `channel` in dataDir/state (docs/channels.md).
func dumpHash(cfg *node.NodeConfig, id, stateDB string) (string, error) {
	dir := filepath.Join(cfg.DataDir, "state")
	if len(cfg.Channels) > 0 {
		dir = filepath.Join(cfg.DataDir, "channels", id, "state")
	}
	db, err := backend.Open(cmp.Or(stateDB, cfg.StateDB.Backend), dir, cfg.StateDB.Options())
	if err != nil {
		return "", err
	}
	d, ok := db.(statedb.Dumper)
	if !ok {
		db.Close()
		return "", fmt.Errorf("state database %s cannot be dumped", cmp.Or(stateDB, cfg.StateDB.Backend))
	}
	sp, keys, sum, err := statedb.Digest(d)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("savepoint %d, %d keys, sha256 %s", sp, keys, hex.EncodeToString(sum[:])[:16]), nil
}
