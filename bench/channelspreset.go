package bench

import (
	"fmt"
	"time"
)

// The channels preset (docs/channels.md): issue 21's target, "three
// channels under load at once: aggregate throughput ≥ 90% of one
// channel's on the same nodes". Smallbank at saturation on one channel
// against the same workload, clients and nodes spread over three
// channels, alternated A B A B A B; then FlexChain's Fig. 6, a
// compute-heavy (K-Means), a data-heavy (YCSB-A) and a mixed (Smallbank)
// contract on three channels side by side. The full form runs node
// processes (bench/rounds/channels.yaml is it); the quick form, one pair
// and Fig. 6 for a few seconds on an embedded network, is a smoke run.
func init() {
	Presets["channels"] = Preset{"channels", "issue 21: Smallbank on one channel against the same load spread over three channels of the same nodes, alternated; then FlexChain Fig. 6: K-Means, YCSB-A and Smallbank on three channels at once",
		channelsRounds}
}

func channelsRounds(full bool) []Round {
	network := pick(full, "", "processes")
	sb := map[string]string{"accounts": pick(full, "1000", "10000")} // quick: a short setup
	var rs []Round
	for pass := range pick(full, 1, 3) {
		for _, ch := range []int{1, 3} {
			r := Round{Label: fmt.Sprintf("smallbank-%dch", ch), Workload: "smallbank", Params: sb, Clients: 48, Channels: ch,
				Duration: pick(full, 2*time.Second, 20*time.Second)}
			r.Network = network
			if pass > 0 {
				r.Label += fmt.Sprintf("-%d", pass+1)
			}
			rs = append(rs, r)
		}
	}
	fig6 := Round{Label: "fig6-kmeans-ycsb-smallbank", Workload: "smallbank", Clients: 48, Channels: 3,
		Duration: pick(full, 2*time.Second, 20*time.Second),
		ChannelWorkloads: []ChannelWorkload{
			{Workload: "kmeans", Params: pick(full, map[string]string{"points": "100", "n": "20", "epochs": "20"}, map[string]string{"points": "200", "n": "50", "epochs": "50"})},
			{Workload: "ycsb", Params: map[string]string{"mix": "a", "records": pick(full, "200", "2000"), "value_size": "1000"}},
			{Workload: "smallbank", Params: sb},
		}}
	fig6.Network = network
	return append(rs, fig6)
}
