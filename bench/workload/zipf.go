package workload

import (
	"math"
	"math/rand/v2"
)

// zipfian is YCSB's ZipfianGenerator (Gray et al., "Quickly generating
// billion-record synthetic databases"): item i (0 is the most popular)
// has probability proportional to 1/(i+1)^theta, for 0 < theta < 1.
// Constants are computed once; next is O(1).
type zipfian struct {
	n                        int
	theta, alpha, zetan, eta float64
	halfPowTheta             float64
}

func newZipfian(n int, theta float64) *zipfian {
	z := &zipfian{n: n, theta: theta}
	for i := 1; i <= n; i++ {
		z.zetan += 1 / math.Pow(float64(i), theta)
	}
	zeta2 := 1 + 1/math.Pow(2, theta)
	z.alpha = 1 / (1 - theta)
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/z.zetan)
	z.halfPowTheta = 1 + math.Pow(0.5, theta)
	return z
}

func (z *zipfian) next(r *rand.Rand) int {
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < z.halfPowTheta {
		return 1
	}
	i := int(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(i, z.n-1)
}

// distribution is a skew s over n items: uniform for s = 0, YCSB's
// zipfian for 0 < s < 1, Zipf's law for s > 1 (FlexChain's high-contention
// runs used s = 2). Its constants are computed once and shared read-only
// by every client's chooser.
type distribution struct {
	n int
	s float64
	z *zipfian
}

func newDistribution(n int, s float64) distribution {
	d := distribution{n: n, s: s}
	if s > 0 && s < 1 {
		d.z = newZipfian(n, s)
	}
	return d
}

// chooser returns a function that draws an index in [0, n) from r.
func (d distribution) chooser(r *rand.Rand) func() int {
	switch {
	case d.s == 0 || d.n == 1:
		return func() int { return r.IntN(d.n) }
	case d.z != nil:
		return func() int { return d.z.next(r) }
	}
	z := rand.NewZipf(r, d.s, 1, uint64(d.n-1))
	return func() int { return int(z.Uint64()) }
}
