package bench

import (
	"fmt"
	"time"

	"github.com/strand-ledger/strand/bench/rate"
	"github.com/strand-ledger/strand/isolation"
)

// The QiOi preset (docs/isolation.md): Smallbank on a network of
// processes, Alone (no hogs), Together (8 hogs) and Together with the
// controller, at saturation and at half the Alone saturation throughput;
// the controller's return to the default once the hogs stop; a sweep of
// its gain k; stream mode as the ordering-service variant and K-Means as
// the compute-heavy contract. Alone and Together run the controller's
// loop with gain 0: the same cgroups and the same measuring, no action;
// the controller's rounds probe the delay every 100 ms between periods.

// qioiHogs is QiOi's Together: eight sysbench containers.
const qioiHogs = 8

func init() {
	Presets["qioi"] = Preset{"qioi", "QiOi: Smallbank on node processes Alone, Together with 8 CPU hogs, and Together with the controller, at saturation and at half the Alone throughput; shares' return after the hogs stop; k sweep; stream mode; K-Means",
		qioiRounds}
}

// qioiSet is one Alone/Together/controller triple.
type qioiSet struct {
	prefix   string
	workload string
	params   map[string]string
	mode     string
	clients  int
	rate     rate.Config
}

// qioiProbe is the controller rounds' probe (IsolationConfig.Probe): the
// hogs' first period otherwise often stalls strand for the 0.6 to 1 s
// until the first sample, which then alone sets a half-rate round's p99
// (in 4 of 6 rounds without probes: 877–3,052 ms, against 269–356 ms with
// them in the same files; docs/isolation.md). Alone and Together (gain 0)
// only measure, so they take none.
func qioiProbe(k float64) time.Duration {
	if k == 0 {
		return 0
	}
	return 100 * time.Millisecond
}

func qioiRounds(full bool) []Round {
	dur := pick(full, 10*time.Second, 60*time.Second)
	sb := map[string]string{"accounts": "1000"}
	sat := rate.Config{Kind: "fixed-load", Load: 64}
	var rs []Round
	add := func(s qioiSet, what string, hogs int, k float64, thresholdOf string) Round {
		r := Round{Label: s.prefix + "-" + what, Workload: s.workload, Params: s.params, Clients: s.clients, Rate: s.rate, Duration: dur,
			BatchMode: s.mode, Interference: Interference{Network: "processes", Hogs: hogs,
				Isolation: &IsolationConfig{K: k, DelayTarget: isolation.DefaultDelayTarget, ThresholdOf: thresholdOf, Probe: qioiProbe(k)}}}
		rs = append(rs, r)
		return r
	}
	triple := func(s qioiSet) {
		alone := add(s, "alone", 0, 0, "").Label
		add(s, "together", qioiHogs, 0, "")
		add(s, "controller", qioiHogs, isolation.DefaultK, alone)
	}
	triple(qioiSet{prefix: "sat", workload: "smallbank", params: sb, clients: 64, rate: sat})
	half := rate.Config{Kind: "fixed-rate", Of: "sat-alone", Fraction: 0.5}
	triple(qioiSet{prefix: "half", workload: "smallbank", params: sb, clients: 64, rate: half})
	// The hogs stop 10 s into 45 (full: 30 s into 90); the rest shows the
	// shares' return to the default (the target: within 30 s).
	add(qioiSet{prefix: "half", workload: "smallbank", params: sb, clients: 64, rate: half}, "controller-hogs-stop", qioiHogs, isolation.DefaultK, "half-alone")
	rs[len(rs)-1].Duration = pick(full, 45*time.Second, 90*time.Second)
	rs[len(rs)-1].HogsStop = pick(full, 10*time.Second, 30*time.Second)
	for _, k := range pick(full, []float64{2, 6, 10}, []float64{2, 4, 6, 8, 10}) {
		add(qioiSet{prefix: "sat", workload: "smallbank", params: sb, clients: 64, rate: sat}, fmt.Sprintf("controller-k%g", k), qioiHogs, k, "sat-alone")
	}
	triple(qioiSet{prefix: "stream-sat", workload: "smallbank", params: sb, mode: "stream", clients: 64, rate: sat})
	km := map[string]string{"points": "200", "n": "50", "epochs": "50"}
	if full {
		km = map[string]string{"points": "2000", "n": "100"}
	}
	triple(qioiSet{prefix: "kmeans-sat", workload: "kmeans", params: km, clients: 8, rate: rate.Config{Kind: "fixed-load", Load: 8}})
	return rs
}
