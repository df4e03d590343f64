package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strand-ledger/strand/bench/rate"
	"github.com/strand-ledger/strand/bench/workload"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
	"github.com/strand-ledger/strand/node"
	"github.com/strand-ledger/strand/orderer/cut"
)

// Round is one benchmark round: a workload at a rate for a duration,
// from Clients concurrent clients. The network fields apply to an
// embedded network, which each round starts afresh; against a --net
// network they must stay unset.
type Round struct {
	Label    string            `yaml:"label" json:"label"`
	Workload string            `yaml:"workload" json:"workload"`
	Params   map[string]string `yaml:"params,omitempty" json:"params,omitempty"`
	Rate     rate.Config       `yaml:"rate" json:"rate"`
	Clients  int               `yaml:"clients" json:"clients"`
	Duration time.Duration     `yaml:"duration" json:"duration"`
	Seed     uint64            `yaml:"seed" json:"seed"`
	// MaxOutstanding bounds the transactions in flight (an open-loop rate
	// above what the network absorbs would otherwise grow without end).
	MaxOutstanding int `yaml:"max_outstanding,omitempty" json:"max_outstanding,omitempty"`

	// Channels drives this many channels of the network at once (unset:
	// 1, the network's first), each with its own workload, clients and
	// figures beside the aggregate (channels.go). A network the round
	// starts serves exactly that many; a --net network at least that many.
	Channels int `yaml:"channels,omitempty" json:"channels,omitempty"`
	// ChannelWorkloads are the channels' workloads in channel order
	// (demo, demo2, ...); a channel past the list runs the round's
	// Workload and Params. Alone it sets Channels to its length.
	ChannelWorkloads []ChannelWorkload `yaml:"channel_workloads,omitempty" json:"channel_workloads,omitempty"`

	// Embedded network.
	Orgs         int           `yaml:"orgs,omitempty" json:"orgs,omitempty"`
	BatchMode    string        `yaml:"batch_mode,omitempty" json:"batch_mode,omitempty"`
	BlockSize    int           `yaml:"block_size,omitempty" json:"block_size,omitempty"`
	BatchTimeout time.Duration `yaml:"batch_timeout,omitempty" json:"batch_timeout,omitempty"`
	StateDB      string        `yaml:"state_db,omitempty" json:"state_db,omitempty"`
	// Validation is the peers' MVCC check and apply (pipeline.mode):
	// sequential (unset: the peers' default) or parallel, along each
	// block's dependency graph (committer/doc.go).
	Validation string `yaml:"validation,omitempty" json:"validation,omitempty"`
	// Alg is the signature algorithm of the network's CAs and of every
	// node's, client's and admin's signing key: ecdsa-p256 (unset) or
	// ed25519, as `strand net up --alg` gives them (TLS keys stay P-256).
	Alg string `yaml:"alg,omitempty" json:"alg,omitempty"`
	// CheckpointBlocks and CheckpointInterval, if either is set, have the
	// orderer sign only checkpoint blocks (orderer.Checkpoints).
	CheckpointBlocks   int           `yaml:"checkpoint_blocks,omitempty" json:"checkpoint_blocks,omitempty"`
	CheckpointInterval time.Duration `yaml:"checkpoint_interval,omitempty" json:"checkpoint_interval,omitempty"`
	// ContractRuntime runs the workload's contract built in ("builtin",
	// the default) or as a WebAssembly module ("wasm"; smallbank only).
	// WasmModule is the module's file; unset, the round builds it from
	// examples/: from the C example with clang (WasmSource "c", the
	// default) or the Go example with the go command ("go"; bench/wasm.go).
	ContractRuntime string `yaml:"contract_runtime,omitempty" json:"contract_runtime,omitempty"`
	WasmModule      string `yaml:"wasm_module,omitempty" json:"wasm_module,omitempty"`
	WasmSource      string `yaml:"wasm_source,omitempty" json:"wasm_source,omitempty"`

	// Process network, interference, isolation and budgets (interference.go).
	Interference `yaml:",inline"`
	// Disaggregated peers and the monolithic peer's memtable (disagg.go).
	Disagg `yaml:",inline"`
}

// EnsureDefaults fills unset fields: smallbank, 16 clients keeping one
// transaction each outstanding, 10 s, seed 1, 2 orgs, block mode with
// blocks of at most 100 transactions cut after 2 ms.
func (r *Round) EnsureDefaults() {
	if r.Workload == "" {
		r.Workload = "smallbank"
	}
	if r.Clients == 0 {
		r.Clients = 16
	}
	if r.Rate.Kind == "" {
		r.Rate.Kind = "fixed-load"
	}
	if r.Rate.Kind == "fixed-load" && r.Rate.Load == 0 {
		r.Rate.Load = r.Clients
	}
	if r.Duration == 0 {
		r.Duration = 10 * time.Second
	}
	if r.Seed == 0 {
		r.Seed = 1
	}
	if r.MaxOutstanding == 0 {
		r.MaxOutstanding = 4096
	}
	if r.Label == "" {
		r.Label = r.Workload
	}
	r.channelDefaults()
}

// embeddedDefaults fills the embedded network's fields.
func (r *Round) embeddedDefaults() {
	if r.Orgs == 0 {
		r.Orgs = 2
	}
	if r.BatchMode == "" {
		r.BatchMode = "block"
	}
	if r.BlockSize == 0 {
		r.BlockSize = cut.DefaultMaxTxs
	}
	if r.BatchTimeout == 0 {
		r.BatchTimeout = cut.DefaultTimeout
	}
}

// Validate checks the round; errors name the round, the field, the value
// and what is allowed.
func (r *Round) Validate(embedded bool) error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("bench: round %q: %s = %v: want %s", r.Label, field, v, want)
	}
	switch {
	case !slices.Contains(workload.Names(), r.Workload):
		return bad("workload", fmt.Sprintf("%q", r.Workload), "one of "+strings.Join(workload.Names(), ", "))
	case r.Clients < 1 || r.Clients > 4096:
		return bad("clients", r.Clients, "1 to 4096")
	case r.Duration < 100*time.Millisecond:
		return bad("duration", r.Duration, "at least 100ms")
	case r.MaxOutstanding < 1:
		return bad("max_outstanding", r.MaxOutstanding, "at least 1")
	}
	if err := r.validateChannels(embedded, bad); err != nil {
		return err
	}
	switch {
	case r.Rate.Of != "" && r.Rate.Kind != "fixed-rate":
		return bad("rate.of", fmt.Sprintf("%q", r.Rate.Of), "only with kind fixed-rate")
	case r.Rate.Of != "" && !(r.Rate.Fraction > 0 && r.Rate.Fraction <= 10):
		return bad("rate.fraction", r.Rate.Fraction, "more than 0 and at most 10 (0.9 is 90% of the earlier round's throughput)")
	case r.Rate.Of == "" && r.Rate.Fraction != 0:
		return bad("rate.fraction", r.Rate.Fraction, "only with rate.of, the label of an earlier round")
	case r.Rate.Of != "" && r.Rate.TPS == 0:
		// Resolved once the earlier round ran (Resolve).
	default:
		if _, err := rate.New(r.Rate, r.Duration); err != nil {
			return fmt.Errorf("bench: round %q: %w", r.Label, err)
		}
	}
	if !embedded {
		if r.Orgs != 0 || r.BatchMode != "" || r.BlockSize != 0 || r.BatchTimeout != 0 || r.StateDB != "" || r.Validation != "" || r.Alg != "" || r.CheckpointBlocks != 0 || r.CheckpointInterval != 0 ||
			r.ContractRuntime != "" || r.WasmModule != "" || r.WasmSource != "" {
			return fmt.Errorf("bench: round %q sets orgs, batch_mode, block_size, batch_timeout, state_db, validation, alg, checkpoint_*, contract_runtime or wasm_module, which only apply to an embedded network: a --net network keeps its own configuration", r.Label)
		}
		if r.Interference.set() {
			return fmt.Errorf("bench: round %q sets network, hogs, isolation, cpu_quota or cgroup_parent, which only apply to a network the round starts: want them unset with --net", r.Label)
		}
		if r.Disagg.set() {
			return fmt.Errorf("bench: round %q sets memnodes, memory_mb, cache_mb, memtable_mb, state_cache_mb, compute_nodes, storage_cache_mb or memory_limit_mb, which only apply to a network the round starts: want them unset with --net", r.Label)
		}
		return nil
	}
	if err := r.Interference.validate(r.Duration); err != nil {
		return fmt.Errorf("bench: round %q: %w", r.Label, err)
	}
	if err := r.Disagg.validate(r.Network == "processes", r.StateDB, r.CPUQuota); err != nil {
		return fmt.Errorf("bench: round %q: %w", r.Label, err)
	}
	switch {
	case r.Orgs < 1 || r.Orgs > 16:
		return bad("orgs", r.Orgs, "1 to 16")
	case r.BatchMode != "block" && r.BatchMode != "stream":
		return bad("batch_mode", fmt.Sprintf("%q", r.BatchMode), "block or stream")
	case r.BlockSize < 1 || r.BlockSize > 100_000:
		return bad("block_size", r.BlockSize, "1 to 100000")
	case r.BatchTimeout < time.Millisecond:
		return bad("batch_timeout", r.BatchTimeout, "at least 1ms")
	case r.CheckpointBlocks < 0 || r.CheckpointBlocks > 1_000_000:
		return bad("checkpoint_blocks", r.CheckpointBlocks, "0 (sign every block) to 1000000")
	case r.CheckpointInterval != 0 && (r.CheckpointInterval < time.Millisecond || r.CheckpointInterval > time.Hour):
		return bad("checkpoint_interval", r.CheckpointInterval, "0 or 1ms to 1h")
	case r.Validation != "" && r.Validation != "sequential" && r.Validation != "parallel":
		return bad("validation", fmt.Sprintf("%q", r.Validation), "sequential or parallel (the peers' pipeline.mode; unset: sequential)")
	case r.Alg != "" && r.Alg != identity.ECDSAP256.String() && r.Alg != identity.Ed25519.String():
		return bad("alg", fmt.Sprintf("%q", r.Alg), "ecdsa-p256 (the default) or ed25519")
	case r.StateDB != "" && !slices.Contains(backend.Names(), r.StateDB):
		return bad("state_db", fmt.Sprintf("%q", r.StateDB), "one of "+strings.Join(backend.Names(), ", "))
	case r.ContractRuntime != "" && r.ContractRuntime != RuntimeBuiltin && r.ContractRuntime != RuntimeWasm && r.ContractRuntime != RuntimeExternal:
		return bad("contract_runtime", fmt.Sprintf("%q", r.ContractRuntime), "builtin (the default), wasm or external")
	case r.ContractRuntime == RuntimeExternal && externalContracts[r.Workload].name == "":
		return bad("contract_runtime", "external", "builtin for workload "+r.Workload+" (only smallbank has an external server)")
	case r.ContractRuntime == RuntimeExternal && r.Network == "processes":
		return bad("contract_runtime", "external", "builtin or wasm with network: processes (the bench serves external contracts to its embedded network only)")
	case r.ContractRuntime == RuntimeWasm && wasmExamples[r.Workload].pkg == "":
		return bad("contract_runtime", "wasm", "builtin for workload "+r.Workload+" (only smallbank has a WebAssembly build)")
	case r.WasmModule != "" && r.ContractRuntime != RuntimeWasm:
		return bad("wasm_module", fmt.Sprintf("%q", r.WasmModule), "unset unless contract_runtime is wasm")
	case r.WasmSource != "" && r.WasmSource != WasmSourceC && r.WasmSource != WasmSourceGo:
		return bad("wasm_source", fmt.Sprintf("%q", r.WasmSource), "c (the default) or go")
	case r.WasmSource != "" && (r.ContractRuntime != RuntimeWasm || r.WasmModule != ""):
		return bad("wasm_source", fmt.Sprintf("%q", r.WasmSource), "unset unless contract_runtime is wasm and wasm_module is unset")
	case r.StateDB != "" && r.Network == "processes":
		return bad("state_db", fmt.Sprintf("%q", r.StateDB), "unset with network: processes (its nodes use their generated configuration, pebble)")
	}
	return nil
}

// netOptions are the embedded network of the round (a round against
// --net has no orgs of its own: its options describe nothing).
func (r *Round) netOptions(keep bool) NetOptions {
	perOrg := 0
	if r.Orgs > 0 {
		perOrg = (r.Clients + r.Orgs - 1) / r.Orgs
	}
	o := NetOptions{
		Orgs: r.Orgs, ClientsPerOrg: perOrg, Keep: keep, Channels: r.Channels, StateDB: r.StateDB, Validation: r.Validation, Disagg: r.Disagg,
		Alg:   identity.ECDSAP256,
		Batch: node.BatchConfig{Mode: r.BatchMode, MaxTxs: r.BlockSize, MaxBytes: 16 << 20, Timeout: r.BatchTimeout},
	}
	if r.Alg == identity.Ed25519.String() { // Validate refused any other
		o.Alg = identity.Ed25519
	}
	if r.CheckpointBlocks > 0 || r.CheckpointInterval > 0 {
		o.Batch.Checkpoint = &node.SignCheckpointConfig{Blocks: r.CheckpointBlocks, Interval: r.CheckpointInterval}
	}
	return o
}

// Resolve sets the rate of a round whose fixed rate is a fraction of an
// earlier round's (rate.Config.Of) from that round's result in done, the
// results of the run so far; other rounds are returned as they are.
func Resolve(r Round, done []*Result) (Round, error) {
	r, err := resolveThreshold(r, done)
	if err != nil || r.Rate.Of == "" {
		return r, err
	}
	for i := len(done) - 1; i >= 0; i-- {
		res := done[i]
		if res == nil || res.Label != r.Rate.Of {
			continue
		}
		tps := res.ThroughputTPS
		if res.Knee != nil {
			tps = res.Knee.Throughput
		}
		if !(tps > 0) {
			return r, fmt.Errorf("bench: round %q: rate.of %q: that round committed nothing, so %g of its throughput is no rate", r.Label, r.Rate.Of, r.Rate.Fraction)
		}
		r.Rate.TPS = r.Rate.Fraction * tps
		return r, nil
	}
	return r, fmt.Errorf("bench: round %q: rate.of %q: no earlier round of this run has that label", r.Label, r.Rate.Of)
}
