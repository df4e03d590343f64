package kmeans

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/strand-ledger/strand/contract"
)

// Name is the contract's name on a channel.
const Name = "kmeans"

// Limits on arguments.
const (
	Scale     = 1000      // fixed-point units per 1.0
	MaxCoord  = 1_000_000 // a coordinate is 0 to MaxCoord (0.0 to 1000.0)
	MaxDims   = 1000      // dimensions of a point
	MaxPoints = 10_000    // points one get_food reads
	MaxK      = 1000      // clusters
	MaxEpochs = 100_000   // iterations of one get_food
	MaxSeed   = 1000      // points one seed_points writes
	MaxID     = 99_999_999
)

// New returns the K-Means contract.
func New() contract.Contract {
	r, err := contract.NewRouter(food{})
	if err != nil {
		panic(err) // food's methods are fixed; the tests build this router
	}
	return r
}

// Result is get_food's result and the value it writes.
type Result struct {
	Epochs    int       `json:"epochs"`    // iterations run
	Converged bool      `json:"converged"` // the last iteration moved no centroid more than the threshold
	Sizes     []int     `json:"sizes"`     // points per cluster
	Centroids [][]int64 `json:"centroids"` // fixed point, Scale units per 1.0
}

type food struct{}

func (food) ParamNames() map[string][]string {
	return map[string][]string{
		"SeedPoints":    {"first", "count", "dims", "seed"},
		"UpdateProfile": {"id", "coords"},
		"GetFood":       {"first", "n", "k", "dims", "epochs", "threshold"},
	}
}

// PointKey is the state key of point id.
func PointKey(id int) string { return fmt.Sprintf("point_%08d", id) }

// ResultKey is the state key get_food(first, ...) writes.
func ResultKey(first int) string { return fmt.Sprintf("result_%08d", first) }

// SeedPoints writes count points from first on, with coordinates drawn
// uniformly from a PCG generator seeded with seed (so every endorser
// draws the same points).
func (food) SeedPoints(stub contract.Stub, first, count, dims int, seed uint64) error {
	if err := checkRange("first", first, 0, MaxID); err != nil {
		return err
	}
	if err := checkRange("count", count, 1, MaxSeed); err != nil {
		return err
	}
	if err := checkRange("dims", dims, 1, MaxDims); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, uint64(first)))
	p := make([]int64, dims)
	for id := first; id < first+count; id++ {
		for d := range p {
			p[d] = rng.Int64N(MaxCoord + 1)
		}
		b, _ := json.Marshal(p) // a []int64 always encodes
		if err := stub.PutState(PointKey(id), b); err != nil {
			return err
		}
	}
	return nil
}

// UpdateProfile overwrites point id without reading it.
func (food) UpdateProfile(stub contract.Stub, id int, coords []int64) error {
	if err := checkRange("id", id, 0, MaxID); err != nil {
		return err
	}
	if err := checkRange("coords length", len(coords), 1, MaxDims); err != nil {
		return err
	}
	for i, c := range coords {
		if c < 0 || c > MaxCoord {
			return contract.Errorf("coordinate %d is %d: want 0 to %d", i, c, MaxCoord)
		}
	}
	b, _ := json.Marshal(coords)
	return stub.PutState(PointKey(id), b)
}

// GetFood reads n points from first on, clusters them into k clusters
// over at most epochs iterations, stopping once no centroid moves more
// than threshold (in units of 1.0), and writes and returns the result.
func (food) GetFood(stub contract.Stub, first, n, k, dims, epochs int, threshold float64) (*Result, error) {
	if err := checkArgs(first, n, k, dims, epochs, threshold); err != nil {
		return nil, err
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = PointKey(first + i)
	}
	raw, err := stub.GetMultipleStates(keys...)
	if err != nil {
		return nil, err
	}
	points := make([][]int64, n)
	for i, b := range raw {
		if b == nil {
			return nil, contract.Statusf(404, "point %d does not exist (seed points first)", first+i)
		}
		if err := json.Unmarshal(b, &points[i]); err != nil {
			return nil, contract.Statusf(500, "point %d does not decode: %v", first+i, err)
		}
		if len(points[i]) != dims {
			return nil, contract.Statusf(409, "point %d has %d dimensions, want %d", first+i, len(points[i]), dims)
		}
	}
	// The threshold compares squared distances, in fixed point.
	t := int64(math.Round(threshold * Scale))
	res := Cluster(points, k, epochs, t*t)
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	return res, stub.PutState(ResultKey(first), b)
}

func checkArgs(first, n, k, dims, epochs int, threshold float64) error {
	for _, c := range []struct {
		name          string
		v, min, limit int
	}{{"first", first, 0, MaxID}, {"n", n, 1, MaxPoints}, {"k", k, 1, MaxK}, {"dims", dims, 1, MaxDims}, {"epochs", epochs, 1, MaxEpochs}} {
		if err := checkRange(c.name, c.v, c.min, c.limit); err != nil {
			return err
		}
	}
	if k > n {
		return contract.Errorf("k %d is more than n %d: want at most one cluster per point", k, n)
	}
	if math.IsNaN(threshold) || threshold < 0 || threshold > MaxCoord/Scale {
		return contract.Errorf("threshold %v: want 0 to %d", threshold, MaxCoord/Scale)
	}
	return nil
}

func checkRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return contract.Errorf("%s %d: want %d to %d", name, v, lo, hi)
	}
	return nil
}

// Cluster runs Lloyd's K-Means on points (all of one dimension, len ≥ k)
// from the first k points as centroids, for at most epochs iterations or
// until no centroid moves a squared distance above threshold2. It uses
// integer arithmetic only, so it is deterministic on every platform.
func Cluster(points [][]int64, k, epochs int, threshold2 int64) *Result {
	dims := len(points[0])
	cent := make([][]int64, k)
	for c := range cent {
		cent[c] = append([]int64(nil), points[c]...)
	}
	assign := make([]int, len(points))
	sums := make([][]int64, k)
	for c := range sums {
		sums[c] = make([]int64, dims)
	}
	sizes := make([]int, k)
	res := &Result{}
	for res.Epochs < epochs {
		res.Epochs++
		for i, p := range points {
			assign[i] = nearest(cent, p)
		}
		for c := range sums {
			clear(sums[c])
			sizes[c] = 0
		}
		for i, p := range points {
			c := assign[i]
			sizes[c]++
			for d, v := range p {
				sums[c][d] += v
			}
		}
		var moved int64
		for c := range cent {
			if sizes[c] == 0 {
				continue // an empty cluster keeps its centroid
			}
			next := make([]int64, dims)
			for d := range next {
				next[d] = sums[c][d] / int64(sizes[c])
			}
			moved = max(moved, dist2(cent[c], next))
			cent[c] = next
		}
		if moved <= threshold2 {
			res.Converged = true
			break
		}
	}
	res.Sizes = append([]int(nil), sizes...)
	res.Centroids = cent
	return res
}

// nearest returns the index of the centroid closest to p; ties go to the
// lower index.
func nearest(cent [][]int64, p []int64) int {
	best, bestD := 0, int64(math.MaxInt64)
	for c, q := range cent {
		if d := dist2(q, p); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func dist2(a, b []int64) int64 {
	var s int64
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return s
}
