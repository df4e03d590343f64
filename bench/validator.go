package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/strand-ledger/strand/committer"
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
	// ReplayCommand, if set, runs the peer in a process of its own: the
	// command line of `strand bench validator-replay`, to which "--spec
	// FILE" is appended. Without it the peer runs in this process, and its
	// CPU and memory figures include the generator's leftovers.
	ReplayCommand []string
	// Workers, if positive, is the cores the peer gets (its verify and
	// apply workers and GOMAXPROCS; the crypto bound uses as many).
	Workers int
	// Reparse makes the peer decode each transaction again at every
	// stage, as a peer without a block cache does.
	Reparse bool
	// Energy, if set, measures the peer's energy.
	Energy *EnergySpec
	// Rates are replays after the first, which is always at full speed:
	// each at a fixed rate or a fraction of the first's throughput.
	Rates []ReplayRate
	// ProfilePrefix, if set, gets a Go CPU profile of each replay's timed
	// part in the file PREFIX + "N.pprof" (N from 0, the full-speed
	// replay, then each of Rates).
	ProfilePrefix string
	// TracePrefix, if set, gets a Go execution trace of each replay's
	// timed part in PREFIX + "N.trace", N as for ProfilePrefix.
	TracePrefix string
}

// ValidatorResult is what one run measured. JSON names are stable.
type ValidatorResult struct {
	Mode      string `json:"mode"`
	StateDB   string `json:"state_db"`
	BlockSize int    `json:"block_size"`
	Blocks    int    `json:"blocks"`
	Txs       int    `json:"txs"`
	Valid     int    `json:"valid"`
	Durable   bool   `json:"durable"`
	// SeparateProcess says the peer ran alone in its own process.
	SeparateProcess bool    `json:"separate_process"`
	Cores           int     `json:"cores"`
	TPS             float64 `json:"tps"`
	// CryptoBoundTPS is the bound through the nodes' verification path
	// (key tables; Ed25519 batches); Ratio is TPS over it. StockBoundTPS
	// is the same bound through crypto/ecdsa alone (Ed25519 one by one),
	// printed beside it.
	CryptoBoundTPS float64 `json:"crypto_bound_tps"`
	StockBoundTPS  float64 `json:"stock_bound_tps,omitempty"`
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
	// Peak resident memory of the peer process (VmHWM); the chain is read
	// from a file, so with SeparateProcess this is the peer's footprint.
	RSSPeakMiB float64 `json:"rss_peak_mib"`
	// Per-block latency through each stage, milliseconds.
	Latency   map[string]Percentiles `json:"latency_ms"`
	ElapsedS  float64                `json:"elapsed_s"`
	Invariant string                 `json:"invariant"`
	// Workers is the cores given to the peer; 0: all (Cores).
	Workers int  `json:"workers,omitempty"`
	Reparse bool `json:"reparse,omitempty"`
	// Rate is how the chain was replayed: "max", or the offered rate.
	Rate string `json:"rate"`
	// OfferedTPS is the rate a paced replay delivered at, tx/s; 0 at
	// full speed.
	OfferedTPS float64          `json:"offered_tps,omitempty"`
	Energy     *ValidatorEnergy `json:"energy,omitempty"`
	// Runtime is where the peer process's CPU went during the replay.
	Runtime *ReplayRuntime `json:"runtime,omitempty"`
}

// Percentiles of a latency distribution, in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// RunValidator generates the chain, measures the crypto bound, then
// replays the chain into a fresh peer and checks the peer's final state
// against the generator's model. With cfg.Rates it returns the first
// replay's result; RunValidatorRates returns them all.
func RunValidator(cfg ValidatorConfig) (*ValidatorResult, error) {
	rs, err := RunValidatorRates(cfg)
	if len(rs) == 0 {
		return nil, err
	}
	return rs[0], err
}

// RunValidatorRates is RunValidator for one chain replayed several
// times, each into a fresh peer: first at full speed, then at each of
// cfg.Rates. The chain and the crypto bound are made once.
func RunValidatorRates(cfg ValidatorConfig) ([]*ValidatorResult, error) {
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
	cores := runtime.GOMAXPROCS(0)
	if cfg.Workers > 0 {
		cores = cfg.Workers
	}
	progress("crypto bound", 0, 1)
	bound, err := MeasureCryptoBound(chain, cores, cfg.CryptoTime)
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
	spec := ReplaySpec{
		Channel: chain.Channel, Contract: chain.Contract, Policy: chain.Policy, OrdererOrg: chain.OrdererOrg,
		Orgs: chain.Orgs, ChainFile: filepath.Join(dir, "chain.bin"), SetupBlocks: chain.SetupBlocks,
		Blocks: chain.Spec.Blocks, Mode: cfg.Mode.String(), StateDB: cfg.StateDB, NoSync: cfg.NoSync,
		BlockSize: chain.Spec.BlockSize, Workers: cfg.Workers, Reparse: cfg.Reparse, Energy: cfg.Energy,
	}
	if err := writeChain(spec.ChainFile, chain.Blocks); err != nil {
		return nil, err
	}
	chain.Blocks = nil
	wantKeys, wantHash := ExpectedDigest(chain.ExpectedState())
	var out []*ValidatorResult
	var maxTPS float64
	for i, rate := range append([]ReplayRate{{}}, cfg.Rates...) {
		spec.Dir = filepath.Join(dir, fmt.Sprintf("peer-%d", i))
		spec.RateTPS = rate.TPS
		if cfg.ProfilePrefix != "" {
			spec.CPUProfile = fmt.Sprintf("%s%d.pprof", cfg.ProfilePrefix, i)
		}
		if cfg.TracePrefix != "" {
			spec.Trace = fmt.Sprintf("%s%d.trace", cfg.TracePrefix, i)
		}
		if rate.OfMax > 0 {
			spec.RateTPS = rate.OfMax * maxTPS
		}
		var rr *ReplayResult
		if cfg.ReplayCommand != nil {
			rr, err = replayProcess(cfg.ReplayCommand, spec, dir, progress)
		} else {
			rr, err = Replay(spec, progress)
		}
		if err != nil {
			return out, err
		}
		res := validatorResult(cfg, chain, bound, rr)
		res.Rate, res.OfferedTPS = rate.String(spec.RateTPS), spec.RateTPS
		out = append(out, res)
		if i == 0 {
			maxTPS = res.TPS
		}
		if err := checkReplay(chain, rr, res, wantKeys, wantHash); err != nil {
			return out, err
		}
	}
	return out, nil
}

func validatorResult(cfg ValidatorConfig, chain *Chain, bound CryptoBound, rr *ReplayResult) *ValidatorResult {
	res := &ValidatorResult{
		Mode: cfg.Mode.String(), StateDB: cfg.StateDB, BlockSize: chain.Spec.BlockSize, Blocks: chain.Spec.Blocks,
		Txs: rr.Txs, Valid: rr.Valid, Durable: !cfg.NoSync, Cores: runtime.GOMAXPROCS(0),
		SeparateProcess: cfg.ReplayCommand != nil, CryptoBoundTPS: bound.TxPerSec, SigsPerTx: chain.SigsPerTx,
		VerifyCPUSecondsPerTx: bound.CPUPerTx.Seconds(), RSSPeakMiB: rr.RSSPeakMiB, ElapsedS: rr.Elapsed.Seconds(),
		Fsyncs: rr.Fsyncs, Latency: rr.Latency, StateKeys: rr.StateKeys, Workers: cfg.Workers, Reparse: cfg.Reparse,
	}
	if bound.Stock != nil {
		res.StockBoundTPS = bound.Stock.TxPerSec
	}
	res.TPS = float64(res.Txs) / rr.Elapsed.Seconds()
	res.Ratio = res.TPS / res.CryptoBoundTPS
	res.CPUSecondsPerTx = rr.CPU.Seconds() / float64(max(res.Txs, 1))
	res.CPURatio = res.CPUSecondsPerTx / res.VerifyCPUSecondsPerTx
	res.BlocksPerFsync = float64(res.Blocks) / float64(max(res.Fsyncs, 1))
	res.Invariant = fmt.Sprintf("total %d == expected %d", rr.Total, chain.FinalTotal)
	if rr.Energy != nil {
		res.Energy = newValidatorEnergy(*rr.Energy, res.Txs, rr.CPU)
	}
	res.Runtime = rr.Runtime
	return res
}

// checkReplay checks a replay's outcome against the generator's model.
func checkReplay(chain *Chain, rr *ReplayResult, res *ValidatorResult, wantKeys int, wantHash string) error {
	switch {
	case rr.Txs != chain.WorkloadTxs || rr.Valid != rr.Txs:
		return fmt.Errorf("bench: %d of %d workload transactions committed VALID; the generated chain is all valid", rr.Valid, chain.WorkloadTxs)
	case rr.StateKeys != wantKeys || rr.StateHash != wantHash:
		return fmt.Errorf("bench: peer state (%d keys, hash %.16s) differs from the model (%d keys, hash %.16s)",
			rr.StateKeys, rr.StateHash, wantKeys, wantHash)
	case rr.Total != chain.FinalTotal:
		return fmt.Errorf("bench: Smallbank invariant broken: %s", res.Invariant)
	}
	res.Invariant = "holds: " + res.Invariant
	return nil
}

// replayProcess runs the replay in a child process (argv plus "--spec
// FILE"), relays its progress lines and returns its result.
func replayProcess(argv []string, spec ReplaySpec, dir string, progress func(string, int, int)) (*ReplayResult, error) {
	specFile := filepath.Join(dir, "replay.json")
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(specFile, raw, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], append(argv[1:len(argv):len(argv)], "--spec", specFile)...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: starting the replay process %s: %w", argv[0], err)
	}
	var other strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var phase string
		var done, total int
		if n, _ := fmt.Sscanf(sc.Text(), "progress %s %d %d", &phase, &done, &total); n == 3 {
			progress(phase, done, total)
			continue
		}
		other.WriteString(sc.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("bench: replay process: %w\n%s", err, other.String())
	}
	var rr ReplayResult
	if err := json.Unmarshal(stdout.Bytes(), &rr); err != nil {
		return nil, fmt.Errorf("bench: replay process result: %w", err)
	}
	return &rr, nil
}
