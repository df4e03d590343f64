package cut

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestCutterScripts runs the scripts in testdata/cutter*.txt with
// github.com/cockroachdb/datadriven (go test -rewrite regenerates the expected
// output). A case is
//
//	run mode=M maxtxs=N maxbytes=N timeout=D   (omitted fields take the defaults)
//	<command lines>
//	----
//	<one output line per command>
//
// Commands:
//
//	add NAME:SIZE... @T   add transactions (SIZE bytes, named NAME) at time T
//	tick @T               Tick at time T
//	free @T               Free at time T (the next stage is idle)
//	flush                 Flush
//	deadline              print Deadline
//
// Times are durations after an arbitrary epoch. An output line echoes the
// command, then "=>" and the batches cut, each as [names] ("-" for none),
// then "| pending NAMES (B bytes)" when transactions are pending.
func TestCutterScripts(t *testing.T) { runScriptFiles(t, "testdata/cutter*.txt", runScript) }

// runScriptFiles runs each file matching pattern, one subtest per file,
// with run answering each case with its output lines.
func runScriptFiles(t *testing.T, pattern string, run func(*testing.T, *datadriven.TestData) []string) {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s files (%v)", pattern, err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				return strings.Join(run(t, d), "\n")
			})
		})
	}
}

// scriptTime reads "@DURATION" as that long after scriptEpoch.
func scriptTime(t *testing.T, d *datadriven.TestData, s string) time.Time {
	t.Helper()
	off, err := time.ParseDuration(strings.TrimPrefix(s, "@"))
	if err != nil || !strings.HasPrefix(s, "@") {
		d.Fatalf(t, "time %q, want @DURATION", s)
	}
	return scriptEpoch.Add(off)
}

// scanConfig reads a run line's key a into cfg if it is one of Config's
// (mode, maxtxs, maxbytes, timeout), and reports whether it was.
func scanConfig(t *testing.T, d *datadriven.TestData, a datadriven.CmdArg, cfg *Config) bool {
	switch a.Key {
	case "maxtxs":
		d.ScanArgs(t, a.Key, &cfg.MaxTxs)
	case "maxbytes":
		d.ScanArgs(t, a.Key, &cfg.MaxBytes)
	case "timeout":
		d.ScanArgs(t, a.Key, &cfg.Timeout)
	case "mode":
		var m string
		d.ScanArgs(t, a.Key, &m)
		cfg.Mode = Mode(m)
	default:
		return false
	}
	return true
}

var scriptEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func runScript(t *testing.T, d *datadriven.TestData) []string {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		d.Fatalf(t, format, args...)
	}
	if d.Cmd != "run" {
		fail("case starts with %q, want \"run key=value...\"", d.Cmd)
	}
	var cfg Config
	for _, a := range d.CmdArgs {
		if !scanConfig(t, d, a, &cfg) {
			fail("%q: unknown key, want mode, maxtxs, maxbytes or timeout", a.String())
		}
	}
	cu := NewCutter(cfg)
	at := func(s string) time.Time { return scriptTime(t, d, s) }
	var cmds, out []string
	if d.Input != "" {
		cmds = strings.Split(d.Input, "\n")
	}
	for _, cmd := range cmds {
		f := strings.Fields(cmd)
		var cuts [][][]byte
		var res string
		switch {
		case len(f) >= 3 && f[0] == "add":
			now := at(f[len(f)-1])
			for _, tx := range f[1 : len(f)-1] {
				cuts = append(cuts, cu.Add(scriptTx(t, tx), now)...)
			}
		case len(f) == 2 && f[0] == "tick":
			if b := cu.Tick(at(f[1])); b != nil {
				cuts = append(cuts, b)
			}
		case len(f) == 2 && f[0] == "free":
			if b := cu.Free(at(f[1])); b != nil {
				cuts = append(cuts, b)
			}
		case len(f) == 1 && f[0] == "flush":
			if b := cu.Flush(); b != nil {
				cuts = append(cuts, b)
			}
		case len(f) == 1 && f[0] == "deadline":
			if dl, ok := cu.Deadline(); ok {
				res = "@" + dl.Sub(scriptEpoch).String()
			} else {
				res = "none"
			}
		default:
			fail("bad command %q", cmd)
		}
		if res == "" {
			res = renderBatches(cuts)
		}
		line := cmd + " => " + res
		if n, bytes := cu.Pending(); n > 0 {
			line += fmt.Sprintf(" | pending %s (%d B)", strings.Join(names(cu.pending), " "), bytes)
		}
		out = append(out, line)
	}
	return out
}

// scriptTx makes a transaction of SIZE bytes named NAME from "NAME:SIZE".
func scriptTx(t *testing.T, spec string) []byte {
	name, sz, ok := strings.Cut(spec, ":")
	size, err := strconv.Atoi(sz)
	if !ok || err != nil || name == "" || strings.Contains(name, ".") || size < len(name) {
		t.Fatalf("transaction %q, want NAME:SIZE with SIZE >= len(NAME) and no '.' in NAME", spec)
	}
	return []byte(name + strings.Repeat(".", size-len(name)))
}

func names(txs [][]byte) []string {
	out := make([]string, len(txs))
	for i, tx := range txs {
		out[i] = strings.TrimRight(string(tx), ".")
	}
	return out
}

func renderBatches(cuts [][][]byte) string {
	if len(cuts) == 0 {
		return "-"
	}
	parts := make([]string, len(cuts))
	for i, b := range cuts {
		parts[i] = "[" + strings.Join(names(b), " ") + "]"
	}
	return strings.Join(parts, " ")
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxTxs: -1, MaxBytes: 1, Timeout: 1}, "MaxTxs is -1"},
		{Config{MaxTxs: 1, MaxBytes: 0, Timeout: 1}, "MaxBytes is 0"},
		{Config{MaxTxs: 1, MaxBytes: 1, Timeout: -time.Second}, "Timeout is -1s"},
		{Config{Mode: "streaming", MaxTxs: 1, MaxBytes: 1, Timeout: 1}, `Mode is "streaming", want "block" or "stream"`},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
	var d Config
	d.EnsureDefaults()
	if d != (Config{Mode: ModeBlock, MaxTxs: 100, MaxBytes: 10 << 20, Timeout: 2 * time.Millisecond}) || d.Validate() != nil {
		t.Errorf("defaults %+v (Validate %v), want strand's 100 txs, 10 MiB, 2ms", d, d.Validate())
	}
}
