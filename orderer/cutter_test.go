package orderer

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata/*.txt")

// TestCutterScripts runs the scripts in testdata/cutter*.txt. A file is a
// sequence of cases separated by blank lines; '#' lines before a case are
// comments. A case is
//
//	run maxtxs=N maxbytes=N timeout=D   (omitted fields take the defaults)
//	<command lines>
//	----
//	<one output line per command>
//
// Commands:
//
//	add NAME:SIZE... @T   add transactions (SIZE bytes, named NAME) at time T
//	tick @T               Tick at time T
//	flush                 Flush
//	deadline              print Deadline
//
// Times are durations after an arbitrary epoch. An output line echoes the
// command, then "=>" and the batches cut, each as [names] ("-" for none),
// then "| pending NAMES (B bytes)" when transactions are pending.
func TestCutterScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/cutter*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/cutter*.txt files (%v)", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cases := readScript(t, path)
			for i := range cases {
				c := &cases[i]
				got := runScript(t, path, c)
				if *rewrite {
					c.want = got
					continue
				}
				if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
					t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, c.line, c.header,
						strings.Join(got, "\n"), strings.Join(c.want, "\n"))
				}
			}
			if *rewrite {
				writeScript(t, path, cases)
			}
		})
	}
}

type scriptCase struct {
	comments []string
	header   string
	cmds     []string
	want     []string
	line     int
}

func readScript(t *testing.T, path string) []scriptCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		cases    []scriptCase
		cur      *scriptCase
		comments []string
		inOutput bool
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && line == "":
		case cur == nil && strings.HasPrefix(line, "#"):
			comments = append(comments, line)
		case cur == nil:
			cases = append(cases, scriptCase{comments: comments, header: line, line: n})
			cur, comments, inOutput = &cases[len(cases)-1], nil, false
		case line == "----" && !inOutput:
			inOutput = true
		case line == "":
			cur = nil
		case inOutput:
			cur.want = append(cur.want, line)
		default:
			cur.cmds = append(cur.cmds, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func writeScript(t *testing.T, path string, cases []scriptCase) {
	t.Helper()
	var b strings.Builder
	for i, c := range cases {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, l := range c.comments {
			b.WriteString(l + "\n")
		}
		b.WriteString(c.header + "\n")
		for _, l := range c.cmds {
			b.WriteString(l + "\n")
		}
		b.WriteString("----\n")
		for _, l := range c.want {
			b.WriteString(l + "\n")
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

var scriptEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func runScript(t *testing.T, path string, c *scriptCase) []string {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s:%d: %s", path, c.line, fmt.Sprintf(format, args...))
	}
	fields := strings.Fields(c.header)
	if len(fields) == 0 || fields[0] != "run" {
		fail("case starts with %q, want \"run key=value...\"", c.header)
	}
	var cfg BatchConfig
	for _, kv := range fields[1:] {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "maxtxs":
			cfg.MaxTxs, err = strconv.Atoi(v)
		case "maxbytes":
			cfg.MaxBytes, err = strconv.Atoi(v)
		case "timeout":
			cfg.Timeout, err = time.ParseDuration(v)
		default:
			err = fmt.Errorf("unknown key, want maxtxs, maxbytes or timeout")
		}
		if err != nil {
			fail("%q: %v", kv, err)
		}
	}
	cu := NewCutter(cfg)
	at := func(s string) time.Time {
		if !strings.HasPrefix(s, "@") {
			fail("time %q, want @DURATION", s)
		}
		d, err := time.ParseDuration(s[1:])
		if err != nil {
			fail("time %q: %v", s, err)
		}
		return scriptEpoch.Add(d)
	}
	var out []string
	for _, cmd := range c.cmds {
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
		case len(f) == 1 && f[0] == "flush":
			if b := cu.Flush(); b != nil {
				cuts = append(cuts, b)
			}
		case len(f) == 1 && f[0] == "deadline":
			if d, ok := cu.Deadline(); ok {
				res = "@" + d.Sub(scriptEpoch).String()
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

func TestBatchConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  BatchConfig
		want string
	}{
		{BatchConfig{MaxTxs: -1, MaxBytes: 1, Timeout: 1}, "BatchConfig.MaxTxs is -1"},
		{BatchConfig{MaxTxs: 1, MaxBytes: 0, Timeout: 1}, "BatchConfig.MaxBytes is 0"},
		{BatchConfig{MaxTxs: 1, MaxBytes: 1, Timeout: -time.Second}, "BatchConfig.Timeout is -1s"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
	var d BatchConfig
	d.EnsureDefaults()
	if d != (BatchConfig{MaxTxs: 500, MaxBytes: 10 << 20, Timeout: 2 * time.Second}) || d.Validate() != nil {
		t.Errorf("defaults %+v (Validate %v), want Fabric's 500 txs, 10 MiB, 2s", d, d.Validate())
	}
}
