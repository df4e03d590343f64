package bench

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/localnet"
)

// TestRunTwoChannels drives two channels of one embedded network at once,
// Smallbank on demo and YCSB on demo2, and checks that the round reports
// both channels, that the aggregate is their sum, and that every
// per-channel check ran and passed (the state check reads each peer's
// state of each channel from disk).
func TestRunTwoChannels(t *testing.T) {
	if testing.Short() {
		t.Skip("starts networks")
	}
	r := Round{Label: "two", Channels: 2, Clients: 4, Duration: 700 * time.Millisecond,
		Workload: "smallbank", Params: map[string]string{"accounts": "100"},
		ChannelWorkloads: []ChannelWorkload{{Workload: "smallbank", Params: map[string]string{"accounts": "100"}}, {Workload: "ycsb", Params: map[string]string{"records": "200", "value_size": "100"}}}}
	res, err := Run(context.Background(), r, Target{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Channels) != 2 || res.Channels[0].Channel != "demo" || res.Channels[1].Channel != "demo2" {
		t.Fatalf("channels %+v: want demo and demo2", res.Channels)
	}
	if res.Workload != "smallbank+ycsb" {
		t.Errorf("workload %q, want smallbank+ycsb", res.Workload)
	}
	var committed, sent int64
	for _, c := range res.Channels {
		if c.Committed == 0 || c.ByCode["VALID"] == 0 || c.ThroughputTPS <= 0 || c.Latency.P50 <= 0 || c.Clients != 2 || c.Blocks == 0 {
			t.Errorf("channel %s (%s): committed %d, codes %v, %.0f tx/s, p50 %.1f ms, %d clients, %d blocks", c.Channel, c.Workload, c.Committed, c.ByCode, c.ThroughputTPS, c.Latency.P50, c.Clients, c.Blocks)
		}
		if !c.Passed() || !slicesHas(c.Checks, "same height") || !slicesHas(c.Checks, "hold the same state") {
			t.Errorf("channel %s: checks %v, failures %v", c.Channel, c.Checks, c.Failures)
		}
		committed += c.Committed
		sent += c.Sent
	}
	if !slicesHas(res.Channels[0].Checks, "Smallbank invariant holds") {
		t.Errorf("channel demo's checks %v: want the Smallbank invariant", res.Channels[0].Checks)
	}
	if committed != res.Committed || sent != res.Sent {
		t.Errorf("channels committed %d and sent %d, the round %d and %d: want the sums", committed, sent, res.Committed, res.Sent)
	}
	if !res.Passed() {
		t.Fatalf("failures %v", res.Failures)
	}
	t.Logf("%.0f tx/s: demo %.0f, demo2 %.0f; checks %v", res.ThroughputTPS, res.Channels[0].ThroughputTPS, res.Channels[1].ThroughputTPS, res.Checks)
}

func slicesHas(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// TestLaneOf: the first n clients go one to each channel, and each
// channel's clients cover every org.
func TestLaneOf(t *testing.T) {
	for _, tc := range []struct{ n, orgs, clients int }{{2, 2, 4}, {3, 2, 6}, {3, 2, 3}, {2, 1, 5}, {3, 3, 9}, {4, 2, 16}} {
		orgs := map[int]map[int]bool{}
		for j := range tc.clients {
			l := laneOf(j, tc.n, tc.orgs)
			if j < tc.n && l != j {
				t.Errorf("n=%d orgs=%d: client %d on channel %d, want %d", tc.n, tc.orgs, j, l, j)
			}
			if orgs[l] == nil {
				orgs[l] = map[int]bool{}
			}
			orgs[l][j%tc.orgs] = true
		}
		if tc.clients >= tc.n*tc.orgs*2 {
			for l := range tc.n {
				if len(orgs[l]) != tc.orgs {
					t.Errorf("n=%d orgs=%d clients=%d: channel %d has orgs %v", tc.n, tc.orgs, tc.clients, l, orgs[l])
				}
			}
		}
	}
}

// bench/rounds/channels.yaml is the channels preset's full form, so the
// published figures and `--preset channels-full` cannot drift apart.
func TestChannelsRoundsFileIsPreset(t *testing.T) {
	file, err := LoadRounds("rounds/channels.yaml")
	if err != nil {
		t.Fatal(err)
	}
	preset, err := PresetRounds("channels-full")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(file, preset) {
		t.Fatalf("rounds/channels.yaml:\n%+v\npreset channels-full:\n%+v", file, preset)
	}
}

// A --net round names the network's first channels, and one asking for
// more channels than the network serves is refused naming both counts.
func TestChannelIDs(t *testing.T) {
	dir := t.TempDir()
	if _, err := localnet.Generate(dir, localnet.Spec{Orgs: 1, Channels: 2}); err != nil {
		t.Fatal(err)
	}
	n, err := OpenNet(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := n.channelIDs(2)
	if err != nil || !reflect.DeepEqual(ids, []string{"demo", "demo2"}) {
		t.Fatalf("channelIDs(2) = %v, %v: want demo, demo2", ids, err)
	}
	if _, err := n.channelIDs(3); err == nil || !strings.Contains(err.Error(), "serves 2 channel(s): want at least 3") {
		t.Fatalf("channelIDs(3) = %v: want an error naming 2 and 3", err)
	}
}
