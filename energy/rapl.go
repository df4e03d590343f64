package energy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RAPL reads the processor's energy counters through Linux powercap:
// under the root, each zone intel-rapl:N is a package (name "package-N")
// or the platform ("psys"); its subzones intel-rapl:N:M are "core",
// "uncore" or "dram". Each zone has energy_uj, a counter in microjoules
// that wraps to 0 after max_energy_range_uj. intel-rapl-mmio:N zones
// (the same package read through MMIO) are not read, so nothing counts
// twice.
//
// Wraparound: a counter that reads lower than last time has wrapped
// once, and the step is (max − last) + now. Two wraps between reads
// cannot be seen, so the caller must read more often than the fastest
// wrap, max_energy_range_uj over the zone's peak power: about 22 minutes
// at 200 W for the 262,143 J range of Intel servers, but only 21 s for a
// part that reports 2^32 µJ. A 10 ms log is far inside either.
type RAPL struct {
	fsys  fs.FS
	root  string // fsys's place on the machine, for errors
	zones []*zone
}

// zone is one RAPL domain and its accumulated count.
type zone struct {
	name     string // "package-0", "package-0/dram"
	kind     string // "package", "core", "uncore", "dram", "psys"
	path     string // the energy_uj file, in fsys
	maxUJ    uint64 // max_energy_range_uj
	lastUJ   uint64 // the raw counter at the last read
	totalUJ  uint64 // microjoules since open, wraps folded in
	inJoules bool   // counted in Reading.Joules
}

var domainKinds = []string{"package", "core", "uncore", "dram", "psys"}

func knownKind(k string) bool { return slices.Contains(domainKinds, k) }

var (
	topZone = regexp.MustCompile(`^intel-rapl:[0-9]+$`)
	subZone = regexp.MustCompile(`^intel-rapl:[0-9]+:[0-9]+$`)
)

// OpenRAPL finds the RAPL zones under the powercap directory root and
// reads each once. require lists domain kinds that must be present;
// empty means "package". A missing root or one without a package zone
// is ErrNoRAPL; a zone whose files cannot be read is ErrRAPLUnreadable,
// naming the file.
func OpenRAPL(root string, require []string) (*RAPL, error) {
	return OpenRAPLFS(os.DirFS(root), root, require)
}

// OpenRAPLFS is OpenRAPL over a file system whose top is the powercap
// directory; root names that directory in errors.
func OpenRAPLFS(fsys fs.FS, root string, require []string) (*RAPL, error) {
	r := &RAPL{fsys: fsys, root: root}
	tops, err := r.listZones(".", topZone)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s does not exist (no powercap on this machine)", ErrNoRAPL, root)
		}
		return nil, fmt.Errorf("%w: listing %s: %w", ErrRAPLUnreadable, root, err)
	}
	for _, top := range tops {
		z, err := r.openZone(top, "")
		if err != nil {
			return nil, err
		}
		r.zones = append(r.zones, z)
		subs, err := r.listZones(top, subZone)
		if err != nil {
			return nil, fmt.Errorf("%w: listing %s: %w", ErrRAPLUnreadable, r.show(top), err)
		}
		for _, sub := range subs {
			s, err := r.openZone(sub, z.name)
			if err != nil {
				return nil, err
			}
			r.zones = append(r.zones, s)
		}
	}
	if len(require) == 0 {
		require = []string{"package"}
	}
	for _, k := range require {
		if !knownKind(k) {
			return nil, fmt.Errorf("energy: RAPL domain %q, want one of %v", k, domainKinds)
		}
		if !slices.ContainsFunc(r.zones, func(z *zone) bool { return z.kind == k }) {
			return nil, fmt.Errorf("%w: no %q domain under %s (found %v)", ErrNoRAPL, k, root, r.names())
		}
	}
	return r, nil
}

// show is p's path on the machine.
func (r *RAPL) show(p string) string { return filepath.Join(r.root, filepath.FromSlash(p)) }

// listZones returns the entries of dir whose names match re, sorted.
func (r *RAPL) listZones(dir string, re *regexp.Regexp) ([]string, error) {
	ents, err := fs.ReadDir(r.fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if re.MatchString(e.Name()) {
			out = append(out, path.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

// openZone reads a zone's name, range and first count. parent is the
// enclosing package's name for a subzone, "" for a top zone.
func (r *RAPL) openZone(dir, parent string) (*zone, error) {
	raw, err := fs.ReadFile(r.fsys, path.Join(dir, "name"))
	if err != nil {
		return nil, fmt.Errorf("%w: zone %s: %w", ErrRAPLUnreadable, r.show(dir), err)
	}
	name := strings.TrimSpace(string(raw))
	kind, _, _ := strings.Cut(name, "-") // "package-0" → "package"
	if !knownKind(kind) {
		return nil, fmt.Errorf("%w: zone %s is named %q, want package-N, core, uncore, dram or psys", ErrRAPLUnreadable, r.show(dir), name)
	}
	if (parent == "") != (kind == "package" || kind == "psys") {
		return nil, fmt.Errorf("%w: zone %s (%q) is at the wrong level: packages and psys are top zones, the rest their subzones", ErrRAPLUnreadable, r.show(dir), name)
	}
	z := &zone{name: name, kind: kind, path: path.Join(dir, "energy_uj")}
	if parent != "" {
		z.name = parent + "/" + name
	}
	// The study counts CPU and DRAM: packages and DRAM add up; core and
	// uncore are inside their package, psys holds the packages.
	z.inJoules = kind == "package" || kind == "dram"
	maxPath := path.Join(dir, "max_energy_range_uj")
	if z.maxUJ, err = r.readUJ(maxPath); err != nil {
		return nil, err
	}
	if z.maxUJ == 0 {
		return nil, fmt.Errorf("%w: %s is 0, want the counter's range in µJ", ErrRAPLUnreadable, r.show(maxPath))
	}
	if z.lastUJ, err = r.readCount(z); err != nil {
		return nil, err
	}
	return z, nil
}

// readCount reads z's counter and checks it against its range.
func (r *RAPL) readCount(z *zone) (uint64, error) {
	n, err := r.readUJ(z.path)
	if err != nil {
		return 0, err
	}
	if n > z.maxUJ {
		return 0, fmt.Errorf("%w: %s reads %d µJ, above max_energy_range_uj %d", ErrRAPLUnreadable, r.show(z.path), n, z.maxUJ)
	}
	return n, nil
}

// readUJ reads one microjoule file.
func (r *RAPL) readUJ(p string) (uint64, error) {
	raw, err := fs.ReadFile(r.fsys, p)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return 0, fmt.Errorf("%w: %s: %w (energy_uj is readable by root only since Linux 5.10; run as root or grant read access)", ErrRAPLUnreadable, r.show(p), err)
		}
		return 0, fmt.Errorf("%w: %s: %w", ErrRAPLUnreadable, r.show(p), err)
	}
	v := strings.TrimSpace(string(raw))
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s holds %q, want microjoules: %w", ErrRAPLUnreadable, r.show(p), v, err)
	}
	return n, nil
}

// Source is SourceRAPL.
func (r *RAPL) Source() Source { return SourceRAPL }

// Read reads every zone and returns the energy since OpenRAPL. A zone
// that fails leaves every zone's count as it was.
func (r *RAPL) Read(now time.Time) (Reading, error) {
	raws := make([]uint64, len(r.zones))
	for i, z := range r.zones {
		n, err := r.readCount(z)
		if err != nil {
			return Reading{}, err
		}
		raws[i] = n
	}
	rd := Reading{At: now, Source: SourceRAPL, Domains: make([]DomainJoules, len(r.zones))}
	var total uint64
	for i, z := range r.zones {
		z.totalUJ += step(z.lastUJ, raws[i], z.maxUJ)
		z.lastUJ = raws[i]
		rd.Domains[i] = DomainJoules{Name: z.name, Joules: float64(z.totalUJ) / 1e6}
		if z.inJoules {
			total += z.totalUJ
		}
	}
	rd.Joules = float64(total) / 1e6
	return rd, nil
}

// step is the energy between two raw counts of a counter that wraps to 0
// after max: a count below the last has wrapped once.
func step(last, now, max uint64) uint64 {
	if now >= last {
		return now - last
	}
	return max - last + now
}

func (r *RAPL) names() []string {
	var out []string
	for _, z := range r.zones {
		out = append(out, z.name)
	}
	return out
}
