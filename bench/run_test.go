package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/bench/rate"
	"github.com/strand-ledger/strand/client"
)

// TestRunWorkloads runs a short round of every workload against a real
// embedded network (gRPC over mutual TLS on 127.0.0.1) and checks what
// the round reports and that its correctness checks pass.
func TestRunWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts networks")
	}
	for _, r := range []Round{
		{Workload: "smallbank", Params: map[string]string{"accounts": "100", "balance": "50", "mix": "hstore", "readonly": "evaluate"}}, // low balances: write_check penalties
		{Workload: "ycsb", Params: map[string]string{"records": "200", "value_size": "100", "mix": "e"}},
		{Workload: "ycsb", Params: map[string]string{"records": "200", "value_size": "100", "mix": "d", "readonly": "evaluate"}},
		{Workload: "fixedasset", Params: map[string]string{"op": "get", "assets": "20", "size": "200"}},
		{Workload: "fixedasset", Params: map[string]string{"op": "create", "batch": "5"}, Rate: rate.Config{Kind: "fixed-rate", TPS: 50}},
		{Workload: "kmeans", Params: map[string]string{"points": "100", "n": "20", "k": "4", "dims": "8", "epochs": "20"}},
		{Workload: "scm", Params: map[string]string{"vendors": "5", "products": "20", "contracts": "50", "mix": "scm95"}, BatchMode: "stream"},
		{Workload: "empty", StateDB: "bbolt"},
		{Label: "maximum", Workload: "empty", Rate: rate.Config{Kind: "maximum-rate", From: 20, Step: 20, StepTime: 200 * time.Millisecond}},
		{Label: "ed25519", Workload: "smallbank", Params: map[string]string{"accounts": "100"}, Alg: "ed25519"},
	} {
		t.Run(r.Workload+"/"+r.Label+r.Params["mix"]+r.Params["op"], func(t *testing.T) {
			r.Clients, r.Duration = 4, 700*time.Millisecond
			var up []string
			logf := func(format string, args ...any) {
				if line := fmt.Sprintf(format, args...); strings.HasPrefix(line, "network up") {
					up = append(up, line)
				}
			}
			res, err := Run(context.Background(), r, Target{Log: logf})
			if err != nil {
				t.Fatal(err)
			}
			// The network's own CA certificates name the algorithm.
			wantAlg := cmp.Or(r.Alg, "ecdsa-p256") + " identities"
			if len(up) != 1 || !strings.HasSuffix(up[0], wantAlg) {
				t.Errorf("network up lines %q, want one ending %q", up, wantAlg)
			}
			if res.Committed+res.Evaluated == 0 || res.Sent == 0 {
				t.Fatalf("nothing done: %v", res.Result)
			}
			if res.Committed > 0 && (res.Latency.P50 <= 0 || res.ByCode["VALID"] == 0 || res.ThroughputTPS <= 0) {
				t.Fatalf("committed %d but latency %v, codes %v, throughput %.0f", res.Committed, res.Latency, res.ByCode, res.ThroughputTPS)
			}
			if res.Committed > 0 && res.Phases["persist"].Count == 0 {
				t.Errorf("no peer phases: %v", res.Phases)
			}
			if len(res.Checks) == 0 || !res.Passed() {
				t.Fatalf("checks %v, failures %v", res.Checks, res.Failures)
			}
			if res.Build.GoVersion != runtime.Version() || res.Build.Commit == "" {
				t.Errorf("result's build %+v, want this binary's (Go %s)", res.Build, runtime.Version())
			}
			if len(res.CPUPercent) != 1 || len(res.Series) == 0 {
				t.Fatalf("cpu %v, series %v", res.CPUPercent, res.Series)
			}
			if r.Rate.Kind == "maximum-rate" && len(res.Steps) < 2 {
				t.Fatalf("maximum-rate measured steps %v: want at least 2 in 700ms of 200ms steps", res.Steps)
			}
			t.Logf("%s: %.0f tx/s, goodput %.0f, evaluations %.0f/s, errors %d %v (last: %s); %v", res.Label, res.ThroughputTPS, res.GoodputTPS, res.EvaluateTPS, res.Errors, res.ByError, res.LastError, res.Checks)
		})
	}
}

func TestRunRejectsBadRounds(t *testing.T) {
	for _, tc := range []struct {
		r      Round
		target Target
		errHas string
	}{
		{Round{Workload: "tpcc"}, Target{}, `workload = "tpcc": want one of empty, fixedasset, kmeans, scm, smallbank, ycsb`},
		{Round{BatchMode: "fast"}, Target{}, `batch_mode = "fast": want block or stream`},
		{Round{StateDB: "couch"}, Target{}, `state_db = "couch": want one of pebble`},
		{Round{Clients: -1}, Target{}, "clients = -1: want 1 to 4096"},
		{Round{Rate: rate.Config{Kind: "fixed-rate"}}, Target{}, "tps = 0: want more than 0"},
		{Round{BlockSize: 10}, Target{Net: t.TempDir()}, "only apply to an embedded network"},
		{Round{Alg: "rsa"}, Target{}, `alg = "rsa": want ecdsa-p256 (the default) or ed25519`},
		{Round{Alg: "ed25519"}, Target{Net: t.TempDir()}, "only apply to an embedded network"},
		{Round{Workload: "ycsb", Params: map[string]string{"mix": "z"}}, Target{}, `parameter mix = "z"`},
		{Round{Channels: 17}, Target{}, "channels = 17: want 1 to 16"},
		{Round{Channels: 3, Clients: 2}, Target{}, "clients = 2: want at least channels (3)"},
		{Round{Channels: 1, ChannelWorkloads: []ChannelWorkload{{Workload: "ycsb"}, {Workload: "ycsb"}}}, Target{}, "channel_workloads = 2 entries: want at most channels (1)"},
		{Round{ChannelWorkloads: []ChannelWorkload{{Workload: "ycsb"}, {Workload: "tpcc"}}}, Target{}, `channel_workloads[1].workload = "tpcc"`},
		{Round{Channels: 2, ContractRuntime: "wasm"}, Target{}, "builtin with channels > 1"},
		{Round{Channels: 2, StateDB: "memory"}, Target{}, "a database on disk with channels > 1"},
		{Round{Channels: 2, ChannelWorkloads: []ChannelWorkload{{Workload: "ycsb", Params: map[string]string{"mix": "z"}}}}, Target{}, `channel 1: `},
	} {
		_, err := Run(context.Background(), tc.r, tc.target)
		if err == nil || !strings.Contains(err.Error(), tc.errHas) || errors.Is(err, ErrCheckFailed) {
			t.Errorf("Run(%+v) = %v, want an error containing %q", tc.r, err, tc.errHas)
		}
	}
}

// TestEndorseTimedOut: setup proposes again only an endorsement that
// timed out, never a submission (which may still commit) or a refusal.
func TestEndorseTimedOut(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&client.EndorseError{Status: http.StatusGatewayTimeout}, true},
		{fmt.Errorf("smallbank.create_accounts: %w", &client.EndorseError{Status: http.StatusGatewayTimeout}), true},
		{&client.SubmitError{Status: http.StatusGatewayTimeout}, false},
		{&client.EndorseError{Status: http.StatusConflict}, false},
		{&client.EndorseError{Status: http.StatusServiceUnavailable}, false},
		{errors.New("client: connection refused"), false},
	} {
		if got := endorseTimedOut(c.err); got != c.want {
			t.Errorf("%v: proposed again %v, want %v", c.err, got, c.want)
		}
	}
}
