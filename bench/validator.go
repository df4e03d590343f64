package bench

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
	"github.com/strand-ledger/strand/policy"
)

// ValidatorConfig is one run of the validator benchmark: replay a
// pre-generated, fully signed Smallbank chain into a fresh validating peer.
type ValidatorConfig struct {
	Chain   ChainSpec
	Mode    committer.Mode
	StateDB string // "pebble" (default) or "memory"
	// Dir holds the peer's ledger; a temporary directory when empty.
	Dir string
	// NoSync skips the block store's fsync (not durable; for comparison).
	NoSync bool
	// CryptoTime is how long the crypto bound is measured (default 2 s).
	CryptoTime time.Duration
	// Progress, if set, is called as each phase advances.
	Progress func(phase string, done, total int)
}

// ValidatorResult is what one run measured. JSON names are stable.
type ValidatorResult struct {
	Mode           string  `json:"mode"`
	StateDB        string  `json:"state_db"`
	BlockSize      int     `json:"block_size"`
	Blocks         int     `json:"blocks"`
	Txs            int     `json:"txs"`
	Valid          int     `json:"valid"`
	Durable        bool    `json:"durable"`
	Cores          int     `json:"cores"`
	TPS            float64 `json:"tps"`
	CryptoBoundTPS float64 `json:"crypto_bound_tps"`
	Ratio          float64 `json:"ratio"`
	// CPU seconds the whole process spent per committed transaction, and
	// what verifying its signatures alone costs (from the crypto bound).
	CPUSecondsPerTx       float64 `json:"cpu_seconds_per_tx"`
	VerifyCPUSecondsPerTx float64 `json:"verify_cpu_seconds_per_tx"`
	CPURatio              float64 `json:"cpu_ratio"`
	SigsPerTx             float64 `json:"sigs_per_tx"`
	Fsyncs                uint64  `json:"fsyncs"`
	BlocksPerFsync        float64 `json:"blocks_per_fsync"`
	StateKeys             int     `json:"state_keys"`
	// Peak resident memory of the process while replaying; the chain is
	// read from a file, so this is the peer's footprint.
	RSSPeakMiB float64 `json:"rss_peak_mib"`
	// Per-block latency through each stage, milliseconds.
	Latency   map[string]Percentiles `json:"latency_ms"`
	ElapsedS  float64                `json:"elapsed_s"`
	Invariant string                 `json:"invariant"`
}

// Percentiles of a latency distribution, in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// RunValidator generates the chain, measures the crypto bound, then
// replays the chain into a fresh peer and checks its final state.
func RunValidator(cfg ValidatorConfig) (*ValidatorResult, error) {
	if cfg.StateDB == "" {
		cfg.StateDB = "pebble"
	}
	if cfg.CryptoTime == 0 {
		cfg.CryptoTime = 2 * time.Second
	}
	progress := cfg.Progress
	if progress == nil {
		progress = func(string, int, int) {}
	}
	chain, err := GenerateChain(cfg.Chain, func(done, total int) { progress("sign", done, total) })
	if err != nil {
		return nil, err
	}
	progress("crypto bound", 0, 1)
	bound, err := MeasureCryptoBound(chain, runtime.GOMAXPROCS(0), cfg.CryptoTime)
	if err != nil {
		return nil, err
	}
	progress("crypto bound", 1, 1)
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "strand-bench-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	// The chain goes to a file and leaves memory, so that the peer's
	// resident memory is measured alone.
	chainFile := filepath.Join(dir, "chain.bin")
	if err := writeChain(chainFile, chain.Blocks); err != nil {
		return nil, err
	}
	expected := chain.ExpectedState()
	chain.Blocks = nil
	runtime.GC()
	debug.FreeOSMemory()
	return replay(cfg, chain, expected, bound, chainFile, dir, progress)
}

func openStateDB(name, dir string) (statedb.DB, error) {
	switch name {
	case "pebble":
		return pebbledb.Open(dir, pebbledb.Options{})
	case "memory":
		return memdb.New(), nil
	}
	return nil, fmt.Errorf("bench: unknown state database %q: want pebble or memory", name)
}

// ChannelOf returns the committer's view of the chain's channel.
func ChannelOf(c *Chain) (committer.Channel, error) {
	reg, err := identity.NewRegistry(c.Orgs)
	if err != nil {
		return committer.Channel{}, err
	}
	pol, err := policy.Parse(c.Policy)
	if err != nil {
		return committer.Channel{}, err
	}
	return committer.Channel{Name: c.Channel, Registry: reg, OrdererOrgs: []string{c.OrdererOrg},
		Policies: map[string]*policy.Policy{c.Contract: pol}}, nil
}

func replay(cfg ValidatorConfig, chain *Chain, expected map[string][]byte, bound CryptoBound,
	chainFile, dir string, progress func(string, int, int)) (*ValidatorResult, error) {
	ch, err := ChannelOf(chain)
	if err != nil {
		return nil, err
	}
	store, err := ledger.OpenBlockStore(filepath.Join(dir, "blocks"), ledger.Options{NoSync: cfg.NoSync})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	db, err := openStateDB(cfg.StateDB, filepath.Join(dir, "state"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	c, err := committer.New(ch, store, db, committer.Options{Mode: cfg.Mode}, nil)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(chainFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	blocks := bufio.NewReaderSize(f, 1<<20)
	total := chain.SetupBlocks + chain.Spec.Blocks

	// Setup blocks (account creation) are committed before timing starts.
	for i := 0; i < chain.SetupBlocks; i++ {
		if err := deliverNext(c, blocks); err != nil {
			return nil, err
		}
		progress("setup", i+1, chain.SetupBlocks)
	}
	if err := c.Sync(); err != nil {
		return nil, err
	}
	before := c.Metrics()
	sub := c.Subscribe(total + 1)
	resetPeakRSS()
	cpu0, err := cryptoProcessCPU()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for i := 0; i < chain.Spec.Blocks; i++ {
		if err := deliverNext(c, blocks); err != nil {
			return nil, err
		}
		if i%16 == 0 || i == chain.Spec.Blocks-1 {
			progress("replay", i+1, chain.Spec.Blocks)
		}
	}
	if err := c.Sync(); err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	cpu1, err := cryptoProcessCPU()
	if err != nil {
		return nil, err
	}
	rss := peakRSSMiB()
	after := c.Metrics()
	if err := c.Close(); err != nil {
		return nil, err
	}
	res := &ValidatorResult{
		Mode: cfg.Mode.String(), StateDB: cfg.StateDB, BlockSize: chain.Spec.BlockSize, Blocks: chain.Spec.Blocks,
		Txs: chain.WorkloadTxs, Durable: !cfg.NoSync, Cores: runtime.GOMAXPROCS(0),
		CryptoBoundTPS: bound.TxPerSec, SigsPerTx: chain.SigsPerTx,
		VerifyCPUSecondsPerTx: bound.CPUPerTx.Seconds(), RSSPeakMiB: rss, ElapsedS: elapsed.Seconds(),
		Fsyncs: after.Groups - before.Groups,
	}
	res.Latency, res.Valid = latencies(sub, chain.Spec.Blocks)
	res.TPS = float64(res.Txs) / elapsed.Seconds()
	res.Ratio = res.TPS / res.CryptoBoundTPS
	res.CPUSecondsPerTx = (cpu1 - cpu0).Seconds() / float64(res.Txs)
	res.CPURatio = res.CPUSecondsPerTx / res.VerifyCPUSecondsPerTx
	res.BlocksPerFsync = float64(res.Blocks) / float64(max(res.Fsyncs, 1))
	if res.StateKeys, res.Invariant, err = checkSmallbank(db, chain, expected); err != nil {
		return res, err
	}
	if res.Valid != res.Txs {
		return res, fmt.Errorf("bench: %d of %d workload transactions were VALID; the generated chain is all valid", res.Valid, res.Txs)
	}
	return res, nil
}

// latencies collects per-stage latency percentiles and the VALID count
// from the commit events of n blocks.
func latencies(sub *committer.Subscription, n int) (map[string]Percentiles, int) {
	stages := map[string][]time.Duration{}
	valid := 0
	for i := 0; i < n; i++ {
		ev, ok := <-sub.C
		if !ok {
			break
		}
		stages["verify"] = append(stages["verify"], ev.Verified.Sub(ev.Received))
		stages["validate"] = append(stages["validate"], ev.Validated.Sub(ev.Verified))
		stages["commit"] = append(stages["commit"], ev.Committed.Sub(ev.Validated))
		stages["total"] = append(stages["total"], ev.Committed.Sub(ev.Received))
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
	return out, valid
}

// checkSmallbank compares the peer's state with the generator's model and
// checks the Smallbank invariant (total money).
func checkSmallbank(db statedb.DB, chain *Chain, expected map[string][]byte) (int, string, error) {
	keys, mismatched := 0, 0
	var total int64
	err := db.Scan(chain.Contract, "", "", func(k string, v statedb.Value) bool {
		keys++
		if string(expected[k]) != string(v.Data) {
			mismatched++
		}
		b, err := ParseBalance(v.Data)
		if err == nil {
			total += b
		}
		return true
	})
	if err != nil {
		return keys, "", err
	}
	if keys != len(expected) || mismatched > 0 {
		return keys, "", fmt.Errorf("bench: state has %d keys (%d differ from the model), want %d", keys, mismatched, len(expected))
	}
	inv := fmt.Sprintf("total %d == expected %d", total, chain.FinalTotal)
	if total != chain.FinalTotal {
		return keys, "", fmt.Errorf("bench: Smallbank invariant broken: %s", inv)
	}
	return keys, "holds: " + inv, nil
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
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return fmt.Errorf("bench: reading chain file: %w", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("bench: reading chain file: %w", err)
	}
	return c.Deliver(b)
}
