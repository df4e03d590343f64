package kmeans

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/strand-ledger/strand/contracts/internal/memstub"
)

func TestGetFoodDeterministic(t *testing.T) {
	c := New()
	var outs []string
	for range 2 { // two endorsers with the same state
		s := memstub.New()
		if _, err := s.Call(c, "seed_points", "0", "200", "10", "7"); err != nil {
			t.Fatal(err)
		}
		out, err := s.Call(c, "get_food", "10", "100", "5", "10", "50", "0.01")
		if err != nil {
			t.Fatal(err)
		}
		if string(s.Get(ResultKey(10))) != string(out) {
			t.Fatalf("written result %q differs from returned %q", s.Get(ResultKey(10)), out)
		}
		if got := s.Reads(); len(got) != 100 || got[0] != PointKey(10) {
			t.Fatalf("reads %d keys from %v, want 100 from %s", len(got), got[:1], PointKey(10))
		}
		outs = append(outs, string(out))
	}
	if outs[0] != outs[1] {
		t.Fatalf("two runs differ:\n%s\n%s", outs[0], outs[1])
	}
	var r Result
	if err := json.Unmarshal([]byte(outs[0]), &r); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range r.Sizes {
		total += n
	}
	if total != 100 || len(r.Centroids) != 5 || r.Epochs < 1 || r.Epochs > 50 {
		t.Fatalf("result %+v: want 100 points in 5 clusters within 50 epochs", r)
	}
}

func TestClusterSeparates(t *testing.T) {
	// Two clear groups around 0 and 1000 (fixed point) converge to them.
	pts := [][]int64{{0, 0}, {1000, 1000}, {10, 0}, {0, 10}, {990, 1000}, {1000, 990}}
	r := Cluster(pts, 2, 100, 0)
	if !r.Converged || r.Sizes[0] != 3 || r.Sizes[1] != 3 {
		t.Fatalf("result %+v: want two clusters of 3, converged", r)
	}
	if r.Centroids[0][0] != 3 || r.Centroids[1][0] != 996 {
		t.Fatalf("centroids %v: want x 3 and 996", r.Centroids)
	}
}

func TestUpdateProfileIsBlind(t *testing.T) {
	s := memstub.New()
	if _, err := s.Call(New(), "update_profile", "5", "[1,2,3]"); err != nil {
		t.Fatal(err)
	}
	if len(s.Reads()) != 0 || string(s.Get(PointKey(5))) != "[1,2,3]" {
		t.Fatalf("reads %v, point %q: want no reads and [1,2,3]", s.Reads(), s.Get(PointKey(5)))
	}
}

func TestBadArgs(t *testing.T) {
	c := New()
	for _, tc := range []struct {
		fn     string
		args   []string
		status int
		errHas string
	}{
		{"get_food", []string{"0", "10", "20", "2", "5", "0.01"}, 400, "k 20 is more than n 10"},
		{"get_food", []string{"0", "10", "2", "2", "0", "0.01"}, 400, "epochs 0: want 1 to 100000"},
		{"get_food", []string{"0", "10", "2", "2", "5", "-1"}, 400, "threshold -1: want 0 to 1000"},
		{"get_food", []string{"0", "10", "2", "2", "5", "0.01"}, 404, "point 0 does not exist"},
		{"update_profile", []string{"1", "[-1]"}, 400, "coordinate 0 is -1"},
		{"seed_points", []string{"0", "0", "2", "1"}, 400, "count 0: want 1 to 1000"},
	} {
		_, err := memstub.New().Call(c, tc.fn, tc.args...)
		memstub.WantError(t, tc.fn, err, tc.status, tc.errHas)
	}
}

// BenchmarkGetFood measures one get_food call on one core with its state
// in memory (memstub): decoding n points of 100 dimensions and clustering
// them into 20 (FlexChain's K-Means, up to 2,000 epochs). It reports the
// epochs the last call ran: uniform points converge in a few, so n (the
// points read per call) is what sets the cost. bench/flexpreset.go's
// Fig. 5(a) preset chooses n from these numbers (docs/flexchain.md).
func BenchmarkGetFood(b *testing.B) {
	for _, n := range []int{100, 400, 1000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := memstub.New()
			const points = 2000
			for first := 0; first < points; first += MaxSeed {
				if _, err := s.Call(New(), "seed_points", strconv.Itoa(first), strconv.Itoa(MaxSeed), "100", "1"); err != nil {
					b.Fatal(err)
				}
			}
			var epochs, calls int
			for i := 0; b.Loop(); i++ {
				first := (i * 97) % (points - n + 1) // a different subset each call
				out, err := s.Call(New(), "get_food", strconv.Itoa(first), strconv.Itoa(n), "20", "100", "2000", "0.01")
				if err != nil {
					b.Fatal(err)
				}
				var r Result
				if err := json.Unmarshal(out, &r); err != nil {
					b.Fatal(err)
				}
				epochs += r.Epochs
				calls++
			}
			b.ReportMetric(float64(epochs)/float64(calls), "epochs/op")
		})
	}
}
