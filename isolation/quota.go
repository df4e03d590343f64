package isolation

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPU quotas. A weight divides the CPU only among processes that want it;
// a quota caps a cgroup however idle the machine is: at most Cores
// CPU-seconds per second, enforced per period by the kernel's CFS
// bandwidth control (cgroup v1 cpu.cfs_quota_us over cpu.cfs_period_us,
// v2 cpu.max "QUOTA PERIOD"). The bench uses it to give a node a budget
// of cores on a small machine (FlexChain's compute scaling); the
// controller never sets one.

// MaxQuotaCores bounds a quota; beyond the machine's cores a quota caps
// nothing, but a larger value is refused as a likely typo.
const MaxQuotaCores = 1024

// minQuotaUS is the kernel's smallest quota per period, in microseconds.
const minQuotaUS = 1000

// CheckQuota reports whether cores is a valid quota: 0 (no quota) or a
// finite number of cores in [0.01, MaxQuotaCores]. field names it in the
// error.
func CheckQuota(field string, cores float64) error {
	if cores == 0 {
		return nil
	}
	if math.IsNaN(cores) || math.IsInf(cores, 0) || cores < 0.01 || cores > MaxQuotaCores {
		return fmt.Errorf("%w: %s is %v cores, want 0 (no quota) or 0.01 to %d", ErrBadConfig, field, cores, MaxQuotaCores)
	}
	return nil
}

// SetQuota caps component's cgroup at cores CPUs (0 removes the cap),
// over the cgroup's current period.
func (a *Actuator) SetQuota(component string, cores float64) error {
	if err := CheckQuota("quota of "+component, cores); err != nil {
		return err
	}
	g, err := a.Group(component)
	if err != nil {
		return err
	}
	period, err := a.quotaPeriod(g)
	if err != nil {
		return err
	}
	quota := int64(math.Round(cores * float64(period)))
	if cores > 0 {
		quota = max(quota, minQuotaUS)
	}
	file, val := filepath.Join(g, "cpu.cfs_quota_us"), strconv.FormatInt(quota, 10)
	switch {
	case a.v2 && cores == 0:
		file, val = filepath.Join(g, "cpu.max"), "max"
	case a.v2:
		file, val = filepath.Join(g, "cpu.max"), fmt.Sprintf("%d %d", quota, period)
	case cores == 0:
		val = "-1"
	}
	if err := writeFile(file, val); err != nil {
		return fmt.Errorf("isolation: writing %q to %s: %w%s", val, file, err, hint(err))
	}
	return nil
}

// Quota reads component's CPU quota back, in cores (0: none).
func (a *Actuator) Quota(component string) (float64, error) {
	g, err := a.Group(component)
	if err != nil {
		return 0, err
	}
	period, err := a.quotaPeriod(g)
	if err != nil {
		return 0, err
	}
	file := filepath.Join(g, "cpu.cfs_quota_us")
	if a.v2 {
		file = filepath.Join(g, "cpu.max")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("isolation: reading %s: %w", file, err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 || f[0] == "max" || f[0] == "-1" {
		return 0, nil
	}
	q, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("isolation: %s holds %q, want a quota in microseconds", file, b)
	}
	return float64(q) / float64(period), nil
}

// quotaPeriod reads cgroup g's bandwidth period in microseconds.
func (a *Actuator) quotaPeriod(g string) (int64, error) {
	file, field := filepath.Join(g, "cpu.cfs_period_us"), 0
	if a.v2 {
		file, field = filepath.Join(g, "cpu.max"), 1
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("isolation: reading %s: %w (is CFS bandwidth control, CONFIG_CFS_BANDWIDTH, in this kernel?)", file, err)
	}
	f := strings.Fields(string(b))
	if len(f) <= field {
		return 0, fmt.Errorf("isolation: %s holds %q, want a period", file, b)
	}
	p, err := strconv.ParseInt(f[field], 10, 64)
	if err != nil || p <= 0 {
		return 0, fmt.Errorf("isolation: %s holds %q, want a period in microseconds", file, b)
	}
	return p, nil
}

// Throttle is a cgroup's CFS bandwidth counters (cpu.stat, cgroup v1
// and v2 alike): the enforcement periods in which it ran with a quota,
// and those in which it used the quota up and waited for the next
// period. A group throttled in most periods is held by its quota; one
// seldom throttled has more than it uses.
type Throttle struct{ Periods, Throttled uint64 }

// ReadThrottle reads the counters of the cgroup directory dir.
func ReadThrottle(dir string) (Throttle, error) {
	file := filepath.Join(dir, "cpu.stat")
	b, err := os.ReadFile(file)
	if err != nil {
		return Throttle{}, fmt.Errorf("isolation: reading %s: %w", file, err)
	}
	var t Throttle
	var seen int
	for _, line := range strings.Split(string(b), "\n") {
		name, v, _ := strings.Cut(line, " ")
		var dst *uint64
		switch name {
		case "nr_periods":
			dst = &t.Periods
		case "nr_throttled":
			dst = &t.Throttled
		default:
			continue
		}
		if *dst, err = strconv.ParseUint(v, 10, 64); err != nil {
			return Throttle{}, fmt.Errorf("isolation: %s: %s is %q, want a count", file, name, v)
		}
		seen++
	}
	if seen != 2 {
		return Throttle{}, fmt.Errorf("isolation: %s holds no nr_periods and nr_throttled (is CFS bandwidth control, CONFIG_CFS_BANDWIDTH, in this kernel?)", file)
	}
	return t, nil
}
