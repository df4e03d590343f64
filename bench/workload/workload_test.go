package workload

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

var env = Env{Run: 7, Clients: 4, Seed: 42}

func build(t *testing.T, name string, p map[string]string) Workload {
	t.Helper()
	w, err := New(name, p, env)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestMixProportions draws many operations and compares each function's
// share with its mix weight.
func TestMixProportions(t *testing.T) {
	const draws = 40_000
	for _, tc := range []struct {
		workload string
		params   map[string]string
		want     map[string]float64 // function → share
	}{
		{"smallbank", nil, map[string]float64{"deposit_checking": .2, "write_check": .2, "transact_savings": .2, "send_payment": .2, "amalgamate": .2}},
		{"smallbank", map[string]string{"mix": "hstore"}, map[string]float64{"amalgamate": .15, "query": .15, "deposit_checking": .15, "send_payment": .25, "transact_savings": .15, "write_check_hstore": .15}},
		{"smallbank", map[string]string{"mix": "caliper", "write_check": "hstore"}, map[string]float64{"write_check_hstore": .2, "write_check": 0}},
		{"ycsb", map[string]string{"mix": "a"}, map[string]float64{"read": .5, "update": .5}},
		{"ycsb", map[string]string{"mix": "b"}, map[string]float64{"read": .95, "update": .05}},
		{"ycsb", map[string]string{"mix": "c"}, map[string]float64{"read": 1}},
		{"ycsb", map[string]string{"mix": "d"}, map[string]float64{"read": .95, "insert": .05}},
		{"ycsb", map[string]string{"mix": "e"}, map[string]float64{"scan": .95, "insert": .05}},
		{"ycsb", map[string]string{"mix": "f"}, map[string]float64{"read": .5, "read_modify_write": .5}},
		{"ycsb", map[string]string{"mix": "read=10,update=90"}, map[string]float64{"read": .1, "update": .9}},
		{"kmeans", map[string]string{"dims": "2", "k": "2", "n": "10"}, map[string]float64{"update_profile": .05, "get_food": .95}},
		{"scm", map[string]string{"mix": "scm99"}, map[string]float64{"days_of_supply": .005, "bullwhip": .005}},
	} {
		t.Run(tc.workload+"/"+tc.params["mix"], func(t *testing.T) {
			g := build(t, tc.workload, tc.params).Client(0)
			got := map[string]int{}
			for range draws {
				got[g.Next().Function]++
			}
			for fn, share := range tc.want {
				// Binomial standard deviation; 5 of them is a loose bound.
				sd := math.Sqrt(share * (1 - share) / draws)
				if f := float64(got[fn]) / draws; math.Abs(f-share) > 5*sd+1e-9 {
					t.Errorf("%s: %.4f of draws, want %.4f ± %.4f", fn, f, share, 5*sd)
				}
			}
		})
	}
}

func TestZipfianSkew(t *testing.T) {
	const n, draws = 1000, 200_000
	r := rand.New(rand.NewPCG(1, 2))
	count := make([]int, n)
	next := newDistribution(n, 0.99).chooser(r)
	for range draws {
		count[next()]++
	}
	// P(item 0) = 1/zeta(n, 0.99), about 0.134 for n = 1000.
	zeta := newZipfian(n, 0.99).zetan
	if p := float64(count[0]) / draws; math.Abs(p-1/zeta) > 0.01 {
		t.Errorf("item 0 drawn %.3f of the time, want %.3f", p, 1/zeta)
	}
	if !(count[0] > count[1] && count[1] > count[10] && count[10] > count[500]) {
		t.Errorf("counts of items 0, 1, 10, 500 = %d %d %d %d: want decreasing", count[0], count[1], count[10], count[500])
	}
	// Uniform and steep distributions.
	uni := newDistribution(n, 0).chooser(r)
	steep := newDistribution(n, 2).chooser(r)
	var u0, s0 int
	for range draws {
		if uni() == 0 {
			u0++
		}
		if steep() == 0 {
			s0++
		}
	}
	if f := float64(u0) / draws; f > 0.003 {
		t.Errorf("uniform: item 0 drawn %.4f of the time, want about 0.001", f)
	}
	if f := float64(s0) / draws; f < 0.55 || f > 0.65 { // 1/zeta(2) = 0.608
		t.Errorf("s = 2: item 0 drawn %.3f of the time, want about 0.61", f)
	}
}

func TestDeterministicBySeed(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p := map[string]string{}
			switch name {
			case "kmeans":
				p = map[string]string{"dims": "3", "k": "2", "n": "5"}
			case "fixedasset":
				p = map[string]string{"op": "get"} // creates draw nothing at random
			}
			draw := func(seed uint64) []Op {
				e := env
				e.Seed = seed
				w, err := New(name, p, e)
				if err != nil {
					t.Fatal(err)
				}
				g := w.Client(1)
				ops := make([]Op, 50)
				for i := range ops {
					ops[i] = g.Next()
				}
				return ops
			}
			a, b, c := draw(1), draw(1), draw(2)
			if !reflect.DeepEqual(a, b) {
				t.Fatal("the same seed gave different operations")
			}
			if name != "empty" && reflect.DeepEqual(a, c) {
				t.Fatal("different seeds gave the same operations")
			}
		})
	}
}

func TestParamErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]string
		errHas string
	}{
		{"nope", nil, `unknown workload "nope": want one of empty, fixedasset, kmeans, scm, smallbank, ycsb`},
		{"ycsb", map[string]string{"mix": "g"}, `workload ycsb: parameter mix = "g": want one of 50, 90, a, b, c, d, e, f or a list like read=50,rmw=50`},
		{"ycsb", map[string]string{"records": "-1"}, `parameter records = "-1": want an integer 1 to 100000000`},
		{"ycsb", map[string]string{"zipf": "1"}, `parameter zipf = "1": want 0 (uniform)`},
		{"ycsb", map[string]string{"recordz": "5"}, `workload ycsb: unknown parameter "recordz": want one of distribution, mix, readonly, records, scan_max, value_size, zipf`},
		{"ycsb", map[string]string{"mix": "read=5,fly=3"}, `unknown operation "fly"`},
		{"smallbank", map[string]string{"readonly": "maybe"}, `parameter readonly = "maybe": want one of submit, evaluate`},
		{"fixedasset", map[string]string{"op": "put"}, `parameter op = "put": want one of create, get, empty`},
		{"kmeans", map[string]string{"n": "50", "k": "60"}, `parameter k = "60": want at most n (50)`},
	} {
		_, err := New(tc.name, tc.params, env)
		if err == nil || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("New(%s, %v) = %v, want an error containing %q", tc.name, tc.params, err, tc.errHas)
		}
	}
}

func TestSetupCoversState(t *testing.T) {
	sb := build(t, "smallbank", map[string]string{"accounts": "2500"}).(*Smallbank)
	st := sb.Setup()
	if len(st) != 1 || len(st[0]) != 3 || st[0][2].Args[1] != "500" {
		t.Fatalf("smallbank setup %v: want one stage of 3 create_accounts, the last of 500", st)
	}
	if sb.InitialTotal() != 2500*2*1_000_000 {
		t.Fatalf("initial total %d", sb.InitialTotal())
	}
	if st := build(t, "scm", nil).Setup(); len(st) != 2 || len(st[1]) != 12 {
		t.Fatalf("scm setup: %d stages, want setup then 12 batches of contracts", len(st))
	}
	fa := build(t, "fixedasset", map[string]string{"op": "get", "assets": "120"}).Setup()
	if len(fa[0]) != env.Clients*3 {
		t.Fatalf("fixedasset get setup: %d ops, want 3 batches for each of %d clients", len(fa[0]), env.Clients)
	}
}

func TestSmallbankTwoAccounts(t *testing.T) {
	g := build(t, "smallbank", map[string]string{"accounts": "2"}).Client(0)
	for range 1000 {
		op := g.Next()
		if (op.Function == "send_payment" || op.Function == "amalgamate") && op.Args[0] == op.Args[1] {
			t.Fatalf("%s with one account twice: %v", op.Function, op.Args)
		}
	}
}

// TestSCMOrderSteps checks that every update_order follows its order's
// previous step by at least orderLag operations, in status order.
func TestSCMOrderSteps(t *testing.T) {
	g := build(t, "scm", nil).Client(0)
	last := map[string]int{}
	status := map[string]string{}
	for i := range 5000 {
		op := g.Next()
		switch op.Function {
		case "place_order":
			last[op.Args[0]], status[op.Args[0]] = i, "placed"
		case "update_order":
			id, next := op.Args[0], op.Args[1]
			want := map[string]string{"placed": "shipped", "shipped": "delivered"}[status[id]]
			if next != want || i-last[id] < orderLag {
				t.Fatalf("op %d: %s → %s, %d ops after its last step; want %s after at least %d", i, id, next, i-last[id], want, orderLag)
			}
			last[id], status[id] = i, next
		}
	}
}
