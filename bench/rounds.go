package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/strand-ledger/strand/bench/rate"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
	"github.com/strand-ledger/strand/node"
)

// RoundsFile is the YAML form of a list of rounds:
//
//	rounds:
//	  - label: ycsb-a
//	    workload: ycsb
//	    params: {mix: a, records: 10000}
//	    rate: {kind: fixed-rate, tps: 500}
//	    clients: 16
//	    duration: 30s
type RoundsFile struct {
	Rounds []Round `yaml:"rounds"`
}

// LoadRounds reads a rounds file strictly: an unknown field is an error
// naming the file, the line, the field and the fields allowed; every
// round must name a workload.
func LoadRounds(path string) ([]Round, error) {
	var f RoundsFile
	if err := node.ReadYAML(path, &f); err != nil {
		return nil, fmt.Errorf("bench: rounds: %s", strings.TrimPrefix(err.Error(), "node: "))
	}
	if len(f.Rounds) == 0 {
		return nil, fmt.Errorf("bench: rounds: %s: no rounds: want a list under \"rounds:\"", path)
	}
	for i, r := range f.Rounds {
		if r.Workload == "" {
			return nil, fmt.Errorf("bench: rounds: %s: round %d (%q) has no workload", path, i+1, r.Label)
		}
	}
	if err := checkOf(f.Rounds); err != nil {
		return nil, fmt.Errorf("bench: rounds: %s: %w", path, err)
	}
	return f.Rounds, nil
}

// checkOf checks that every rate.of and isolation.threshold_of names the
// label of an earlier round.
func checkOf(rounds []Round) error {
	labels := map[string]bool{}
	for i, r := range rounds {
		if of := r.Rate.Of; of != "" && !labels[of] {
			return fmt.Errorf("round %d (%q): rate.of = %q: want the label of an earlier round", i+1, r.Label, of)
		}
		if r.Isolation != nil && r.Isolation.ThresholdOf != "" && !labels[r.Isolation.ThresholdOf] {
			return fmt.Errorf("round %d (%q): isolation.threshold_of = %q: want the label of an earlier round", i+1, r.Label, r.Isolation.ThresholdOf)
		}
		labels[r.Label] = true
	}
	return nil
}

// Preset is a named list of rounds reproducing a paper's experiment, in a
// quick form (seconds, for a smoke run) and a full form.
type Preset struct {
	Name, About string
	Rounds      func(full bool) []Round
}

// Presets are the rounds --preset selects.
var Presets = map[string]Preset{
	"default": {"default", "Smallbank (Caliper's modify mix), 16 clients keeping one transaction each outstanding",
		func(full bool) []Round {
			return []Round{{Label: "smallbank", Workload: "smallbank", Duration: pick(full, 5*time.Second, 30*time.Second)}}
		}},
	"streamchain-latency": {"streamchain-latency", "StreamChain Fig. 5: YCSB-90 latency against throughput, stream mode against blocks of 10, 100 and 500 with Fabric's 2 s timeout and a tuned 10 ms one; first one client alone in stream mode and in blocks of 500 with 2 s and 10 ms timeouts",
		func(full bool) []Round {
			rs := []Round{
				lowLoad("1client-stream", "ycsb", "90", "stream", 0, 0, full),
				lowLoad("1client-block500-2s", "ycsb", "90", "block", 500, 2*time.Second, full),
				lowLoad("1client-block500-10ms", "ycsb", "90", "block", 500, 10*time.Millisecond, full),
			}
			rates := pick(full, []float64{200}, []float64{50, 200, 500, 1000, 1500})
			for _, c := range streamChainModes() {
				for _, tps := range rates {
					rs = append(rs, Round{Label: fmt.Sprintf("%s-%gtps", c.label, tps), Workload: "ycsb", Params: map[string]string{"mix": "90"},
						Rate: rate.Config{Kind: "fixed-rate", TPS: tps}, Clients: 64, Duration: pick(full, 3*time.Second, 20*time.Second),
						BatchMode: c.mode, BlockSize: c.size, BatchTimeout: c.timeout})
				}
			}
			return rs
		}},
	"streamchain-scm": {"streamchain-scm", "StreamChain Table I: supply-chain (SCM-95 and SCM-99) latency of one client, stream mode against blocks of 500 with 2 s and 10 ms timeouts",
		func(full bool) []Round {
			var rs []Round
			for _, mix := range []string{"scm95", "scm99"} {
				rs = append(rs,
					lowLoad(mix+"-stream", "scm", mix, "stream", 0, 0, full),
					lowLoad(mix+"-block500-2s", "scm", mix, "block", 500, 2*time.Second, full),
					lowLoad(mix+"-block500-10ms", "scm", mix, "block", 500, 10*time.Millisecond, full))
			}
			return rs
		}},
	"streamchain-contention": {"streamchain-contention", "StreamChain Fig. 7: YCSB-50 over 1,000 against 10,000 keys (uniform): the maximum throughput of blocks of 100 cut after 10 ms and of stream mode, goodput at 90% of each, and stream mode's at the block mode's 90% (the same offered load)",
		func(full bool) []Round {
			var rs []Round
			for _, keys := range []string{"1000", "10000"} {
				var blockMax string // the block mode's maximum-rate round, run first
				for _, c := range []modeConfig{{"block100-10ms", "block", 100, 10 * time.Millisecond}, {"stream", "stream", 0, 0}} {
					p := map[string]string{"mix": "50", "records": keys, "zipf": "0"}
					max := Round{Label: "max-" + c.label + "-" + keys + "-keys", Workload: "ycsb", Params: p, Clients: 64,
						Rate:      rate.Config{Kind: "maximum-rate", From: 200, Step: pick(full, 400.0, 200.0), StepTime: pick(full, time.Second, 4*time.Second)},
						Duration:  pick(full, 6*time.Second, 60*time.Second),
						BatchMode: c.mode, BlockSize: c.size, BatchTimeout: c.timeout}
					at90 := max
					at90.Label = "90pct-" + c.label + "-" + keys + "-keys"
					at90.Rate = rate.Config{Kind: "fixed-rate", Of: max.Label, Fraction: 0.9}
					at90.Duration = pick(full, 3*time.Second, 30*time.Second)
					rs = append(rs, max, at90)
					if c.mode == "block" {
						blockMax = max.Label
						continue
					}
					same := at90 // stream mode offered the block mode's load
					same.Label = "90pct-of-block-" + c.label + "-" + keys + "-keys"
					same.Rate.Of = blockMax
					rs = append(rs, same)
				}
			}
			return rs
		}},
	"flexchain-kmeans": {"flexchain-kmeans", "FlexChain: K-Means (K=20, 100 dimensions, up to 2000 epochs, threshold 0.01), 95% get_food",
		func(full bool) []Round {
			p := map[string]string{"points": "2000", "n": "100"}
			if !full {
				p = map[string]string{"points": "200", "n": "50", "epochs": "50"}
			}
			return []Round{{Label: "kmeans", Workload: "kmeans", Params: p, Clients: 8, Duration: pick(full, 3*time.Second, 60*time.Second)}}
		}},
	"flexchain-ycsb-a": {"flexchain-ycsb-a", "FlexChain: YCSB-A (10 KB records) at zipfian s = 0 and s = 2",
		func(full bool) []Round {
			var rs []Round
			for _, s := range []string{"0", "2"} {
				rs = append(rs, Round{Label: "ycsb-a-s" + s, Workload: "ycsb",
					Params:  map[string]string{"mix": "a", "zipf": s, "value_size": "10000", "records": pick(full, "1000", "400000")},
					Clients: 16, Duration: pick(full, 3*time.Second, 60*time.Second)})
			}
			return rs
		}},
	"statedb-study": {"statedb-study", "state-DB study: fixed-asset create and get (1 KB; full: 100 B to 64 KB) on each on-disk state database this binary has (rocksdb with -tags rocksdb)",
		func(full bool) []Round {
			sizes := []string{"1000"}
			if full {
				sizes = []string{"100", "1000", "4000", "8000", "16000", "32000", "64000"}
			}
			var dbs []string
			for _, db := range backend.Names() {
				if backend.Persistent(db) { // memory: not a database on disk, nothing to compare
					dbs = append(dbs, db)
				}
			}
			// A row's rounds run back to back, every backend in turn, so
			// that the machine's drift over the study does not fall on
			// whole backends (bench/rounds/statedb-medium.yaml).
			var rs []Round
			for _, size := range sizes {
				for _, db := range dbs {
					rs = append(rs, Round{Label: "create-" + size + "-" + db, Workload: "fixedasset", StateDB: db,
						Params: map[string]string{"op": "create", "size": size}, Clients: 10,
						Rate: rate.Config{Kind: "fixed-load", Load: 100}, Duration: pick(full, 2*time.Second, 300*time.Second)})
				}
				for _, db := range dbs {
					rs = append(rs, Round{Label: "get-" + size + "-" + db, Workload: "fixedasset", StateDB: db,
						Params: map[string]string{"op": "get", "size": size, "assets": pick(full, "100", "1000")}, Clients: 10,
						Rate: rate.Config{Kind: "fixed-load", Load: 500}, Duration: pick(full, 2*time.Second, 300*time.Second)})
				}
			}
			return rs
		}},
}

// modeConfig is one ordering configuration of the StreamChain presets.
type modeConfig struct {
	label, mode string
	size        int
	timeout     time.Duration
}

// streamChainModes are Fig. 5's series: stream mode, and blocks of 10, 100
// and 500 with Fabric's default 2 s timeout and with a tuned 10 ms one.
func streamChainModes() []modeConfig {
	out := []modeConfig{{"stream", "stream", 500, 0}}
	for _, size := range []int{10, 100, 500} {
		for _, t := range []time.Duration{2 * time.Second, 10 * time.Millisecond} {
			out = append(out, modeConfig{fmt.Sprintf("block%d-%v", size, t), "block", size, t})
		}
	}
	return out
}

// lowLoad is a round of one client with one transaction outstanding: the
// latency floor of a configuration.
func lowLoad(label, workload, mix, mode string, size int, timeout time.Duration, full bool) Round {
	return Round{Label: label, Workload: workload, Params: map[string]string{"mix": mix}, Clients: 1,
		Rate: rate.Config{Kind: "fixed-load", Load: 1}, Duration: pick(full, 3*time.Second, 30*time.Second),
		BatchMode: mode, BlockSize: size, BatchTimeout: timeout}
}

func pick[T any](full bool, quick, long T) T {
	if full {
		return long
	}
	return quick
}

// PresetRounds returns the rounds of preset name: "NAME" (quick) or
// "NAME-full".
func PresetRounds(name string) ([]Round, error) {
	base, full := strings.CutSuffix(name, "-full")
	p, ok := Presets[base]
	if !ok {
		return nil, fmt.Errorf("bench: unknown preset %q: want one of %s (quick), or NAME-full", name, strings.Join(slices.Sorted(maps.Keys(Presets)), ", "))
	}
	return p.Rounds(full), nil
}
