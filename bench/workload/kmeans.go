package workload

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/strand-ledger/strand/contracts/kmeans"
)

// KMeans is FlexChain's compute-heavy workload: update_profile (blind
// writes, update percent of operations) and get_food (reads n points
// from a uniformly chosen start, clusters them, writes the result).
type KMeans struct {
	env                    Env
	p                      *params
	points, n, k, dims     int
	epochs, update, offset int
	threshold              string
}

func newKMeans(p *params, env Env) Workload {
	w := &KMeans{env: env, p: p}
	w.points = p.int("points", 1000, 1, 10_000_000)
	w.n = p.int("n", 100, 1, kmeans.MaxPoints)
	w.k = p.int("k", 20, 1, kmeans.MaxK)
	w.dims = p.int("dims", 100, 1, kmeans.MaxDims)
	w.epochs = p.int("epochs", 2000, 1, kmeans.MaxEpochs)
	w.threshold = strconv.FormatFloat(p.float("threshold", 0.01, 0, kmeans.MaxCoord/kmeans.Scale), 'g', -1, 64)
	w.update = p.int("update_percent", 5, 0, 100)
	switch {
	case w.n > w.points:
		p.fail("n", itoa(w.n), "at most points ("+itoa(w.points)+")")
	case w.k > w.n:
		p.fail("k", itoa(w.k), "at most n ("+itoa(w.n)+")")
	}
	// Points of different runs live at different ids.
	w.offset = int(env.Run%90) * 1_000_000
	if w.points > 1_000_000 {
		w.offset = 0
	}
	return w
}

func (w *KMeans) Name() string              { return "kmeans" }
func (w *KMeans) Contract() string          { return kmeans.Name }
func (w *KMeans) Params() map[string]string { return w.p.snapshot() }

// Setup seeds the points, 200 per transaction (about 160 KB at 100 dimensions).
func (w *KMeans) Setup() [][]Op {
	per := min(kmeans.MaxSeed, max(1, 20_000/w.dims))
	var ops []Op
	for i := 0; i < w.points; i += per {
		ops = append(ops, Op{Contract: kmeans.Name, Function: "seed_points", Submit: true,
			Args: []string{itoa(w.offset + i), itoa(min(per, w.points-i)), itoa(w.dims), strconv.FormatUint(w.env.Seed, 10)}})
	}
	return [][]Op{ops}
}

func (w *KMeans) Client(id int) Generator {
	r := rng(w.env, id)
	return GeneratorFunc(func() Op {
		if r.IntN(100) < w.update {
			p := make([]int64, w.dims)
			for d := range p {
				p[d] = r.Int64N(kmeans.MaxCoord + 1)
			}
			b, _ := json.Marshal(p)
			return Op{Contract: kmeans.Name, Function: "update_profile", Submit: true,
				Args: []string{itoa(w.offset + r.IntN(w.points)), string(b)}}
		}
		first := w.offset + r.IntN(w.points-w.n+1)
		return Op{Contract: kmeans.Name, Function: "get_food", Submit: true,
			Args: []string{itoa(first), itoa(w.n), itoa(w.k), itoa(w.dims), itoa(w.epochs), w.threshold}}
	})
}

// SetupSummary says what Setup creates.
func (w *KMeans) SetupSummary() string {
	return fmt.Sprintf("seeded %d points of %d dimensions", w.points, w.dims)
}
