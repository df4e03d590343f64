package bench

import (
	"errors"

	"github.com/strand-ledger/strand/bench/rate"
	"github.com/strand-ledger/strand/bench/stats"
	"github.com/strand-ledger/strand/internal/buildinfo"
)

// ErrCheckFailed marks a round whose correctness checks failed; Run
// returns it wrapped, with the Result, so that reports still show it.
var ErrCheckFailed = errors.New("bench: correctness check failed")

// Result is what a round measured: its configuration, throughput and
// latency, resources, and the outcome of its checks.
type Result struct {
	Label    string            `json:"label"`
	Workload string            `json:"workload"`
	Params   map[string]string `json:"params"`
	Round    Round             `json:"config"`
	Rate     string            `json:"rate"`
	Network  string            `json:"network"` // "embedded" or the --net directory
	Measures string            `json:"measures"`
	// Build is the strand binary that ran the round (with --net, the
	// nodes' own builds are in their strand_build_info).
	Build buildinfo.Info `json:"build"`
	// Host is the machine the load ran on (with --net, the nodes' too
	// when the network is local).
	Host Host `json:"host"`

	ElapsedS      float64 `json:"elapsed_s"`
	SendTPS       float64 `json:"send_tps"`       // transactions started per second
	ThroughputTPS float64 `json:"throughput_tps"` // committed per second, any code
	GoodputTPS    float64 `json:"goodput_tps"`    // committed VALID per second
	EvaluateTPS   float64 `json:"evaluate_tps"`   // evaluations answered per second
	Blocks        int     `json:"blocks"`         // blocks holding the round's committed transactions (of all its channels)

	// Channels are each channel's figures and checks, for a round that
	// drives several (Round.Channels); the Result's own figures are then
	// the aggregate, its Workload the channels' workloads joined by "+",
	// its Params the first channel's, and its peer phases the first
	// channel's on the first peer.
	Channels []ChannelResult `json:"channels,omitempty"`

	stats.Result
	CPUPercent map[string]float64 `json:"cpu_percent"` // by process, % of one core
	RSSMB      map[string]float64 `json:"rss_mb"`      // by process, highest sampled
	Usage      Usage              `json:"usage"`
	Energy     *RunEnergy         `json:"energy,omitempty"`

	// Isolation: hogs, controller and quotas (interference.go); nil
	// when the round had none.
	Isolation *IsolationResult `json:"isolation,omitempty"`
	// Tiers: what each state tier answered, for a round with memory
	// nodes (disagg.go); nil otherwise.
	Tiers *TierResult `json:"tiers,omitempty"`
	// MemoryLimits: each memory node's memory cgroup, for a round with
	// memory_limit_mb (memlimit.go).
	MemoryLimits []MemoryLimitResult `json:"memory_limits,omitempty"`

	Knee     *rate.StepResult  `json:"knee,omitempty"`
	Steps    []rate.StepResult `json:"steps,omitempty"`
	Checks   []string          `json:"checks"`
	Failures []string          `json:"failures,omitempty"`
	Warnings []string          `json:"warnings,omitempty"`
}

// Passed reports whether every check passed.
func (r *Result) Passed() bool { return len(r.Failures) == 0 }

// measures says what the latency figures are.
const measures = "latency_ms: end to end per committed transaction, from its intended start " +
	"(the rate controller's tick) to the commit notice from the client's own org's peer. " +
	"Client phases: endorse (propose, endorse on every org, sign), submit (to the orderer's admission, as the gateway timed it), " +
	"commit (ordering, delivery, validation, durable commit, notice). " +
	"Peer phases (first peer; embedded networks: per block, counted once per transaction; --net networks: per block, " +
	"from the peer's strand_committer_stage_seconds histogram, at its buckets' resolution): " +
	"verify (received to signatures checked), validate (to MVCC and state update), persist (to durable)."
