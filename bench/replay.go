package bench

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode/memnodetest"
	"github.com/strand-ledger/strand/policy"
)

// ReplaySpec is everything a replay process needs: the channel, where the
// chain is, and how to run the peer. It travels as JSON.
type ReplaySpec struct {
	Channel     string
	Contract    string
	Policy      string
	OrdererOrg  string
	Orgs        []identity.Org
	ChainFile   string
	SetupBlocks int
	Blocks      int
	Mode        string
	StateDB     string
	NoSync      bool
	Dir         string
	// BlockSize is the workload blocks' transactions, for pacing.
	BlockSize int `json:",omitempty"`
	// RateTPS, if positive, paces delivery: block i is handed over at
	// i·BlockSize/RateTPS seconds. 0 delivers as fast as the peer takes.
	RateTPS float64 `json:",omitempty"`
	// Workers, if positive, is the peer's cores: its verify and apply
	// workers and GOMAXPROCS.
	Workers int `json:",omitempty"`
	// Reparse makes the peer decode every transaction again at each
	// stage (committer.Options.Reparse).
	Reparse bool `json:",omitempty"`
	// Energy, if set, measures the replay's energy.
	Energy *EnergySpec `json:",omitempty"`
	// CPUProfile, if set, is a file for a Go CPU profile of the timed
	// replay.
	CPUProfile string `json:",omitempty"`
	// Trace, if set, is a file for a Go execution trace of the timed
	// replay.
	Trace string `json:",omitempty"`
}

// ReplayResult is what the replay process measured of itself.
type ReplayResult struct {
	Txs        int                    `json:"txs"`
	Valid      int                    `json:"valid"`
	Elapsed    time.Duration          `json:"elapsed_ns"`
	CPU        time.Duration          `json:"cpu_ns"`
	RSSPeakMiB float64                `json:"rss_peak_mib"`
	Fsyncs     uint64                 `json:"fsyncs"`
	Latency    map[string]Percentiles `json:"latency_ms"`
	StateKeys  int                    `json:"state_keys"`
	StateHash  string                 `json:"state_hash"`
	Total      int64                  `json:"total"`
	Energy     *ReplayEnergy          `json:"energy,omitempty"`
	Runtime    *ReplayRuntime         `json:"runtime,omitempty"`
}

// ReplayMain runs a replay described by the JSON spec in specFile, writes
// progress lines ("progress PHASE DONE TOTAL") to progress and the result
// as JSON to out. It is the body of the hidden `strand bench
// validator-replay` command, so that the peer runs in a process of its own
// and its CPU time and memory are measured alone.
func ReplayMain(specFile string, out, progress io.Writer) error {
	raw, err := os.ReadFile(specFile)
	if err != nil {
		return err
	}
	var spec ReplaySpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("bench: replay spec %s: %w", specFile, err)
	}
	res, err := Replay(spec, func(phase string, done, total int) {
		fmt.Fprintf(progress, "progress %s %d %d\n", phase, done, total)
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(res)
}

func (s *ReplaySpec) channel() (committer.Channel, error) {
	reg, err := identity.NewRegistry(s.Orgs)
	if err != nil {
		return committer.Channel{}, err
	}
	pol, err := policy.Parse(s.Policy)
	if err != nil {
		return committer.Channel{}, err
	}
	return committer.Channel{Name: s.Channel, Registry: reg, OrdererOrgs: []string{s.OrdererOrg},
		Policies: map[string]*policy.Policy{s.Contract: pol}}, nil
}

// openStateDB opens the replaying peer's state database in dir. For
// memnode it serves a memory node in this process (memnodetest: the real
// server and client, gRPC over mutual TLS on 127.0.0.1, certificates of
// a fresh CA) with the default memory tier and local cache, and its
// Close stops the node too. The node's CPU is then counted with the
// peer's: the figure is the peer and its memory tier together.
func openStateDB(name, dir string) (statedb.DB, error) {
	if name != backend.Memnode {
		return backend.Open(name, dir, backend.Options{})
	}
	t, err := memnodetest.NewTLS()
	if err != nil {
		return nil, fmt.Errorf("bench: the replay's memory node: %w", err)
	}
	return memnodetest.Open(t, dir, tiered.Options{}, 0)
}

// Replay runs a fresh peer over the chain file in this process: setup
// blocks untimed, then the workload blocks timed.
func Replay(spec ReplaySpec, progress func(string, int, int)) (*ReplayResult, error) {
	mode, err := committer.ParseMode(spec.Mode)
	if err != nil {
		return nil, err
	}
	ch, err := spec.channel()
	if err != nil {
		return nil, err
	}
	store, err := ledger.OpenBlockStore(filepath.Join(spec.Dir, "blocks"), ledger.Options{NoSync: spec.NoSync})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	db, err := openStateDB(spec.StateDB, filepath.Join(spec.Dir, "state"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if spec.Workers > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(spec.Workers))
	}
	opts := committer.Options{Mode: mode, VerifyWorkers: spec.Workers, ApplyWorkers: spec.Workers, Reparse: spec.Reparse}
	var rec *energyRecorder
	if spec.Energy != nil {
		rec = newEnergyRecorder(spec.Energy, spec.Blocks)
		opts.OnBusy = rec.onBusy
	}
	c, err := committer.New(ch, store, db, opts, nil)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(spec.ChainFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	blocks := bufio.NewReaderSize(f, 1<<20)
	for i := 0; i < spec.SetupBlocks; i++ {
		if err := deliverNext(c, blocks); err != nil {
			return nil, err
		}
		progress("setup", i+1, spec.SetupBlocks)
	}
	if err := c.Sync(); err != nil {
		return nil, err
	}
	before := c.Metrics()
	sub := c.Subscribe(spec.Blocks + 1)
	if rec != nil {
		cfg := spec.Energy.Meter
		if cfg.Model.Cores == 0 && spec.Workers > 0 {
			cfg.Model.Cores = spec.Workers // the cores given to the peer, as the study counts them
		}
		if err := rec.start(cfg); err != nil {
			return nil, err
		}
	}
	stopProfile, err := startReplayProfile(spec.CPUProfile)
	if err != nil {
		return nil, err
	}
	stopTrace, err := startReplayTrace(spec.Trace)
	if err != nil {
		return nil, err
	}
	rt0, err := readRuntime(false)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for i := 0; i < spec.Blocks; i++ {
		if spec.RateTPS > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(float64(i*spec.BlockSize) / spec.RateTPS * float64(time.Second)))))
		}
		b, err := readNext(blocks)
		if err != nil {
			return nil, err
		}
		if rec != nil && spec.RateTPS > 0 {
			// The busy edge: Deliver's receive interval starts now. Read
			// after the chain file, whose reading is the bench's work.
			rec.edge()
		}
		if err := c.Deliver(b); err != nil {
			return nil, err
		}
		if i%16 == 15 || i == spec.Blocks-1 {
			progress("replay", i+1, spec.Blocks)
		}
	}
	if err := c.Sync(); err != nil {
		return nil, err
	}
	res := &ReplayResult{Elapsed: time.Since(start)}
	rt1, err := readRuntime(true)
	if err != nil {
		return nil, err
	}
	res.CPU = rt1.cpu() - rt0.cpu()
	res.Runtime = rt1.since(rt0)
	if err := stopProfile(); err != nil {
		return nil, err
	}
	if err := stopTrace(); err != nil {
		return nil, err
	}
	if rec != nil {
		if res.Energy, err = rec.finish(); err != nil {
			return nil, err
		}
	}
	res.Fsyncs = c.Metrics().Groups - before.Groups
	if err := c.Close(); err != nil {
		return nil, err
	}
	res.Latency, res.Txs, res.Valid = latencies(sub, spec.Blocks)
	if res.StateKeys, res.StateHash, res.Total, err = stateDigest(db, spec.Contract); err != nil {
		return nil, err
	}
	res.RSSPeakMiB = peakRSSMiB()
	return res, nil
}

// latencies collects per-stage latency percentiles, the transaction count
// and the VALID count from the commit events of n blocks.
func latencies(sub *committer.Subscription, n int) (map[string]Percentiles, int, int) {
	stages := map[string][]time.Duration{}
	txs, valid := 0, 0
	for i := 0; i < n; i++ {
		ev, ok := <-sub.C
		if !ok {
			break
		}
		stages["verify"] = append(stages["verify"], ev.Verified.Sub(ev.Received))
		stages["validate"] = append(stages["validate"], ev.Validated.Sub(ev.Verified))
		stages["commit"] = append(stages["commit"], ev.Committed.Sub(ev.Validated))
		stages["total"] = append(stages["total"], ev.Committed.Sub(ev.Received))
		txs += len(ev.Codes)
		for _, c := range ev.Codes {
			if api.TxValidationCode(c) == api.TxValidationCode_VALID {
				valid++
			}
		}
	}
	out := map[string]Percentiles{}
	for name, ds := range stages {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		ms := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))]) / 1e6 }
		out[name] = Percentiles{P50: ms(0.50), P99: ms(0.99), Max: ms(1)}
	}
	return out, txs, valid
}

// stateDigest hashes the namespace's keys and values in key order and sums
// its Smallbank balances.
func stateDigest(db statedb.DB, ns string) (keys int, hash string, total int64, err error) {
	h := sha256.New()
	err = db.Scan(ns, "", "", func(k string, v statedb.Value) bool {
		keys++
		digestKV(h, k, v.Data)
		if b, err := ParseBalance(v.Data); err == nil {
			total += b
		}
		return true
	})
	return keys, hex.EncodeToString(h.Sum(nil)), total, err
}

// ExpectedDigest is stateDigest of the generator's model.
func ExpectedDigest(state map[string][]byte) (keys int, hash string) {
	ks := make([]string, 0, len(state))
	for k := range state {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	h := sha256.New()
	for _, k := range ks {
		digestKV(h, k, state[k])
	}
	return len(ks), hex.EncodeToString(h.Sum(nil))
}

func digestKV(h io.Writer, k string, v []byte) {
	var n [8]byte
	binary.BigEndian.PutUint32(n[:4], uint32(len(k)))
	binary.BigEndian.PutUint32(n[4:], uint32(len(v)))
	h.Write(n[:])
	io.WriteString(h, k)
	h.Write(v)
}

// writeChain writes blocks as length-prefixed records.
func writeChain(path string, blocks [][]byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for _, b := range blocks {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		w.Write(n[:])
		w.Write(b)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func deliverNext(c *committer.Committer, r *bufio.Reader) error {
	b, err := readNext(r)
	if err != nil {
		return err
	}
	return c.Deliver(b)
}

// readNext reads the next block of a chain file.
func readNext(r *bufio.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("bench: reading chain file: %w", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("bench: reading chain file: %w", err)
	}
	return b, nil
}
