package isolation

import "errors"

// Shares is a CPU weight in cgroup v1 cpu.shares units, the unit QiOi's rule
// is written in. The actuator writes it as cpu.shares under cgroup v1 and
// converts it with Weight under cgroup v2.
type Shares int

// The ranges the kernel accepts and the defaults a new cgroup starts with.
const (
	// MinShares and MaxShares bound cgroup v1 cpu.shares; a new cgroup
	// has DefaultShares.
	MinShares     Shares = 2
	MaxShares     Shares = 262144
	DefaultShares Shares = 1024
	// MinWeight and MaxWeight bound cgroup v2 cpu.weight; a new cgroup has
	// DefaultWeight.
	MinWeight     = 1
	MaxWeight     = 10000
	DefaultWeight = 100
)

// Sentinel errors; the returned errors wrap them and say more.
var (
	// ErrBadConfig: a Config or ActuatorOptions field is out of range.
	ErrBadConfig = errors.New("isolation: bad configuration")
	// ErrBadSample: a measurement or time given to Controller.Observe is
	// invalid.
	ErrBadSample = errors.New("isolation: bad sample")
	// ErrNoCgroup: no writable cgroup hierarchy with the cpu controller.
	ErrNoCgroup = errors.New("isolation: no usable cgroup")
)

// Weight returns s as a cgroup v2 cpu.weight. The kernel schedules a v2
// weight w as the load weight w·1024/100 and a v1 share s as s, so the
// weight that schedules like s is s·100/1024, rounded to the nearest and
// clamped to [MinWeight, MaxWeight]: DefaultShares maps to DefaultWeight,
// and shares above 102400 all map to MaxWeight. (runc's conversion,
// 1+(s−2)·9999/262142, maps 1024 to 39 and so changes a default cgroup's
// standing against its siblings; strand does not use it.)
func (s Shares) Weight() int {
	w := (int(s)*DefaultWeight + int(DefaultShares)/2) / int(DefaultShares)
	return min(max(w, MinWeight), MaxWeight)
}

// SharesOfWeight is the inverse of Weight for reading a v2 cgroup back:
// the shares that schedule like cpu.weight w.
func SharesOfWeight(w int) Shares {
	return Shares((w*int(DefaultShares) + DefaultWeight/2) / DefaultWeight)
}
