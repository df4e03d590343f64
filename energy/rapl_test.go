package energy

import (
	"bufio"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// powercap writes the recorded tree in testdata/name into a temporary
// directory and returns its root.
func powercap(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	root := t.TempDir()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p, v, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: line %q has no value", name, line)
		}
		write(t, root, p, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return root
}

func write(t *testing.T, root, p, v string) {
	t.Helper()
	full := filepath.Join(root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func setUJ(t *testing.T, root, zone string, uj uint64) {
	t.Helper()
	write(t, root, zone+"/energy_uj", strconv.FormatUint(uj, 10))
}

const (
	pkg0  = "intel-rapl:0"
	core0 = "intel-rapl:0/intel-rapl:0:0"
	dram0 = "intel-rapl:0/intel-rapl:0:1"
	pkg1  = "intel-rapl:1"
	core1 = "intel-rapl:1/intel-rapl:1:0"
	dram1 = "intel-rapl:1/intel-rapl:1:1"
)

var t0 = time.Date(2026, 11, 24, 20, 0, 0, 0, time.UTC)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func domains(r Reading) map[string]float64 {
	m := map[string]float64{}
	for _, d := range r.Domains {
		m[d.Name] = d.Joules
	}
	return m
}

// TestRAPLRead: a two-socket server's counters step; Joules is both
// packages plus both DRAMs, core is listed but not added, and the MMIO
// copy of package 0 is ignored.
func TestRAPLRead(t *testing.T) {
	root := powercap(t, "powercap.txt")
	m, err := OpenRAPL(root, []string{"package", "core", "dram"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Read(t0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Joules != 0 || r.Source != SourceRAPL || r.Model != nil {
		t.Fatalf("first reading = %+v, want 0 J from rapl without model", r)
	}
	setUJ(t, root, pkg0, 105_000_000) // +5 J
	setUJ(t, root, core0, 64_000_000) // +4 J, inside package 0
	setUJ(t, root, dram0, 21_000_000) // +1 J
	setUJ(t, root, pkg1, 53_000_000)  // +3 J
	setUJ(t, root, dram1, 10_500_000) // +0.5 J
	setUJ(t, root, "intel-rapl-mmio:0", 900_099_999)
	r, err = m.Read(t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Joules, 9.5) {
		t.Errorf("Joules = %v, want 9.5 (packages 5+3, DRAM 1+0.5)", r.Joules)
	}
	want := map[string]float64{"package-0": 5, "package-0/core": 4, "package-0/dram": 1, "package-1": 3, "package-1/core": 0, "package-1/dram": 0.5}
	got := domains(r)
	if len(got) != len(want) {
		t.Errorf("domains %v, want %v", got, want)
	}
	for k, v := range want {
		if !near(got[k], v) {
			t.Errorf("domain %s = %v J, want %v", k, got[k], v)
		}
	}
	if !r.At.Equal(t0.Add(time.Second)) {
		t.Errorf("At = %v, want the time Read was given", r.At)
	}
}

// TestRAPLLaptop: no DRAM domain, psys listed but not added (it holds
// the package), uncore inside the package.
func TestRAPLLaptop(t *testing.T) {
	root := powercap(t, "powercap-laptop.txt")
	if _, err := OpenRAPL(root, []string{"dram"}); !errors.Is(err, ErrNoRAPL) || !strings.Contains(err.Error(), `"dram"`) {
		t.Errorf("requiring dram on a laptop: %v, want ErrNoRAPL naming dram", err)
	}
	m, err := OpenRAPL(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	setUJ(t, root, "intel-rapl:0", 9_000_000)
	setUJ(t, root, "intel-rapl:0/intel-rapl:0:1", 1_500_000)
	setUJ(t, root, "intel-rapl:1", 20_000_000)
	r, err := m.Read(t0)
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Joules, 2) {
		t.Errorf("Joules = %v, want 2 (the package only)", r.Joules)
	}
	if d := domains(r); !near(d["psys"], 8) || !near(d["package-0/uncore"], 1) {
		t.Errorf("domains = %v, want psys 8 J and uncore 1 J listed", d)
	}
}

// TestRAPLWrap: a counter that passes max_energy_range_uj starts again
// at 0; the step across the wrap is what was left below the range plus
// the new count, and the sum goes on rising after it.
func TestRAPLWrap(t *testing.T) {
	root := powercap(t, "powercap.txt")
	const maxUJ = 262143328850
	setUJ(t, root, pkg0, maxUJ-1_000_000) // 1 J below the top
	m, err := OpenRAPL(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		uj   uint64
		want float64 // package-0 since open
	}{
		{2_000_000, 3}, // wrapped: 1 J to the top, 2 J after
		{5_000_000, 6}, // +3 J, no wrap
		{maxUJ, 262143.328850 - 5 + 6},
		{0, 262143.328850 - 5 + 6}, // exactly at the wrap: no energy
		{1, 262143.328851 - 5 + 6},
	}
	for i, s := range steps {
		setUJ(t, root, pkg0, s.uj)
		r, err := m.Read(t0.Add(time.Duration(i) * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if got := domains(r)["package-0"]; math.Abs(got-s.want) > 1e-6 {
			t.Errorf("step %d (counter %d): package-0 = %v J, want %v", i, s.uj, got, s.want)
		}
	}
	// The DRAM range is smaller than the package's; each zone wraps at
	// its own.
	setUJ(t, root, dram0, 65712999613-500_000)
	m, err = OpenRAPL(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	setUJ(t, root, dram0, 250_000)
	r, err := m.Read(t0)
	if err != nil {
		t.Fatal(err)
	}
	if got := domains(r)["package-0/dram"]; !near(got, 0.75) {
		t.Errorf("DRAM across its wrap = %v J, want 0.75", got)
	}
}

// denyFS refuses to open one file, as sysfs does energy_uj to a user
// without root since Linux 5.10.
type denyFS struct {
	fs.FS
	deny string
}

func (d denyFS) Open(name string) (fs.File, error) {
	if name == d.deny {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return d.FS.Open(name)
}

func TestRAPLPermission(t *testing.T) {
	root := powercap(t, "powercap.txt")
	_, err := OpenRAPLFS(denyFS{os.DirFS(root), pkg1 + "/energy_uj"}, root, nil)
	if !errors.Is(err, ErrRAPLUnreadable) || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("denied energy_uj: %v, want ErrRAPLUnreadable wrapping fs.ErrPermission", err)
	}
	for _, s := range []string{filepath.Join(root, pkg1, "energy_uj"), "root"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
	if os.Geteuid() == 0 {
		return // root reads any mode; the real file's permission bits prove nothing
	}
	if err := os.Chmod(filepath.Join(root, dram0, "energy_uj"), 0o200); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRAPL(root, nil); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("mode 0200 energy_uj: %v, want a permission error", err)
	}
}

// TestRAPLBadTrees: every fault in the tree is an error at open, of the
// right kind, naming the file or domain.
func TestRAPLBadTrees(t *testing.T) {
	for _, c := range []struct {
		name    string
		change  func(t *testing.T, root string) string // returns the root to open
		require []string
		want    error
		names   string
	}{
		{"no powercap", func(t *testing.T, root string) string { return filepath.Join(root, "absent") }, nil, ErrNoRAPL, "absent"},
		{"no package zone", func(t *testing.T, root string) string {
			for _, z := range []string{pkg0, pkg1} {
				if err := os.RemoveAll(filepath.Join(root, z)); err != nil {
					t.Fatal(err)
				}
			}
			return root
		}, nil, ErrNoRAPL, `"package"`},
		{"required dram missing", func(t *testing.T, root string) string {
			for _, z := range []string{dram0, dram1} {
				if err := os.RemoveAll(filepath.Join(root, z)); err != nil {
					t.Fatal(err)
				}
			}
			return root
		}, []string{"package", "dram"}, ErrNoRAPL, `"dram"`},
		{"garbled counter", func(t *testing.T, root string) string {
			write(t, root, core1+"/energy_uj", "12ab")
			return root
		}, nil, ErrRAPLUnreadable, `energy_uj holds "12ab"`},
		{"no range", func(t *testing.T, root string) string {
			if err := os.Remove(filepath.Join(root, dram1, "max_energy_range_uj")); err != nil {
				t.Fatal(err)
			}
			return root
		}, nil, ErrRAPLUnreadable, filepath.Join(dram1, "max_energy_range_uj")},
		{"zero range", func(t *testing.T, root string) string {
			write(t, root, pkg0+"/max_energy_range_uj", "0")
			return root
		}, nil, ErrRAPLUnreadable, "max_energy_range_uj is 0"},
		{"count above range", func(t *testing.T, root string) string {
			write(t, root, dram0+"/energy_uj", "65712999614")
			return root
		}, nil, ErrRAPLUnreadable, "above max_energy_range_uj 65712999613"},
		{"unknown domain", func(t *testing.T, root string) string {
			write(t, root, pkg1+"/intel-rapl:1:2/name", "gpu")
			return root
		}, nil, ErrRAPLUnreadable, `named "gpu"`},
		{"core as a top zone", func(t *testing.T, root string) string {
			write(t, root, "intel-rapl:2/name", "core")
			return root
		}, nil, ErrRAPLUnreadable, "wrong level"},
		{"no name", func(t *testing.T, root string) string {
			if err := os.Remove(filepath.Join(root, pkg1, "name")); err != nil {
				t.Fatal(err)
			}
			return root
		}, nil, ErrRAPLUnreadable, "intel-rapl:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := c.change(t, powercap(t, "powercap.txt"))
			m, err := OpenRAPL(root, c.require)
			if !errors.Is(err, c.want) {
				t.Fatalf("OpenRAPL = %v, %v; want %v", m, err, c.want)
			}
			if !strings.Contains(err.Error(), c.names) {
				t.Errorf("error %q does not name %q", err, c.names)
			}
		})
	}
}

// TestRAPLFailedReadKeepsCounts: a Read that fails on one zone changes
// no zone's count, so the next good Read still sees every step once.
func TestRAPLFailedReadKeepsCounts(t *testing.T) {
	root := powercap(t, "powercap.txt")
	m, err := OpenRAPL(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	setUJ(t, root, pkg0, 102_000_000)
	write(t, root, dram1+"/energy_uj", "")
	if _, err := m.Read(t0); !errors.Is(err, ErrRAPLUnreadable) {
		t.Fatalf("Read with an empty dram counter: %v, want ErrRAPLUnreadable", err)
	}
	setUJ(t, root, dram1, 11_000_000)
	r, err := m.Read(t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Joules, 3) {
		t.Errorf("Joules after a failed read = %v, want 3 (package-0 2 J, dram 1 J)", r.Joules)
	}
}
