package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The docs runner keeps the docs true. TestDocsCommandsParse checks that
// every strand command in every code block of README.md and docs/ names
// a command that exists, with flags it has and arguments it takes.
// TestDocsNetwork runs docs/network.md's walkthrough as written, block
// by block, with the built binary as `strand`, and checks each command's
// exit status and the output the page shows.
//
// A block's behaviour is set by comments on the lines right above its
// fence, which Markdown does not show:
//
//	<!-- docs: skip: WHY -->        not run (say which test covers it)
//	<!-- docs: before: COMMAND -->  a shell command run first; must succeed
//	<!-- docs: exit-only: WHY -->   run; only the exit status is checked
//
// Output is compared after normalizing what differs between runs (see
// normalize): addresses, PIDs, hashes, times, durations, numbers of four
// or more digits, the directory the network lives in, which orderer leads.
// Every line the page shows must appear in the output, in order; `...` or
// `…` stands for any lines (alone) or any text (inside a line). A command
// is expected to fail exactly when the output shown has a `strand: ` line.

func TestDocsCommandsParse(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md")
	checked := 0
	for _, f := range files {
		blocks, err := readDocBlocks(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			for _, c := range b.commands() {
				for _, words := range shellWords(c.text) {
					args, ok := strandArgs(words)
					if !ok || placeholder(args) {
						continue
					}
					checked++
					if err := parses(args); err != nil {
						t.Errorf("%s:%d: `strand %s`: %v", f, c.line, strings.Join(args, " "), err)
					}
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d strand commands in the docs: the reader lost them", checked)
	}
}

// placeholder reports arguments that are a synopsis, not a command:
// <FILE>, [--flag], NAME..., $VARIABLES.
func placeholder(args []string) bool {
	for _, a := range args {
		if strings.ContainsAny(a, "<>[]$…") || strings.Contains(a, "...") {
			return true
		}
	}
	return false
}

// parses resolves args to a command and parses its flags and arguments,
// running nothing.
func parses(args []string) error {
	root := rootCmd()
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if c == root {
		return errors.New("no such command")
	}
	if err := c.ParseFlags(rest); err != nil {
		return err
	}
	if c.Runnable() {
		return c.ValidateArgs(c.Flags().Args())
	}
	return errors.New("not a runnable command (it only groups others)")
}

func TestDocsParser(t *testing.T) {
	for _, tc := range []struct {
		line string
		want string
	}{
		{`strand net up --dir a && grep x b | head # note`, `[strand net up --dir a] [grep x b] [head]`},
		{`strand invoke -- write_check alice "-5" 'a b'`, `[strand invoke -- write_check alice -5 a b]`},
		{`go build -ldflags "-X a=$(date -u +%FT%TZ)" -o strand &`, `[go build -ldflags -X a=$(date -u +%FT%TZ) -o strand]`},
	} {
		var parts []string
		for _, w := range shellWords(tc.line) {
			parts = append(parts, "["+strings.Join(w, " ")+"]")
		}
		if got := strings.Join(parts, " "); got != tc.want {
			t.Errorf("shellWords(%q) = %s, want %s", tc.line, got, tc.want)
		}
	}
	if got := normalize([]string{"NODE  PID  STATE", "peer0 312   running", "pid 99 stopped at 127.0.0.1:4000 in /tmp/x/strand-net took 15.3ms"}); strings.Join(got, "|") != "NODE PID STATE|peer0 <n> running|pid <n> stopped at <addr> in strand-net took <dur>" {
		t.Errorf("normalize: %q", got)
	}
	if err := match([]string{"a", "...", "c <n>…"}, []string{"a", "b", "c <n> and more"}); err != nil {
		t.Errorf("match: %v", err)
	}
	if err := match([]string{"a", "c"}, []string{"c", "a"}); err == nil {
		t.Error("match accepted lines out of order")
	}
}

func TestDocsNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("starts networks of real processes")
	}
	blocks, err := readDocBlocks("../../docs/network.md")
	if err != nil {
		t.Fatal(err)
	}
	r := newDocRunner(t)
	ran := 0
	for _, b := range blocks {
		cmds := b.commands()
		if len(cmds) == 0 {
			continue
		}
		if why, ok := b.directive("skip"); ok {
			if why == "" {
				t.Errorf("%s: skip without a reason", b)
			}
			continue
		}
		for _, before := range b.all("before") {
			if out, err := r.run(before); err != nil {
				t.Fatalf("%s: before: %s: %v\n%s", b, before, err, out)
			}
		}
		_, exitOnly := b.directive("exit-only")
		for _, c := range cmds {
			ran++
			out, err := r.run(c.text)
			wantFail := false
			for _, l := range c.output {
				wantFail = wantFail || strings.HasPrefix(l, "strand: ")
			}
			switch {
			case wantFail && err == nil:
				t.Errorf("%s:%d: `%s` succeeded; the page shows it failing\n%s", b.file, c.line, c.text, out)
				continue
			case !wantFail && err != nil:
				t.Errorf("%s:%d: `%s`: %v\n%s", b.file, c.line, c.text, err, out)
				continue
			}
			if exitOnly {
				continue
			}
			if err := match(normalize(c.output), normalize(strings.Split(strings.TrimRight(out, "\n"), "\n"))); err != nil {
				t.Errorf("%s:%d: `%s`: the output differs from the page: %v\nthe page:\n%s\nthe output:\n%s",
					b.file, c.line, c.text, err, strings.Join(c.output, "\n"), out)
			}
		}
	}
	if ran < 15 {
		t.Errorf("ran only %d commands of docs/network.md", ran)
	}
}

// docRunner runs shell commands in a directory of its own, with the test
// binary as `strand` first on PATH.
type docRunner struct {
	t     *testing.T
	dir   string
	env   []string
	pgids []int // process groups of the commands run, for the cleanup
}

func newDocRunner(t *testing.T) *docRunner {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "strand")); err != nil {
		t.Fatal(err)
	}
	r := &docRunner{t: t, dir: t.TempDir(),
		env: append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "STRAND_TEST_MAIN=1")}
	t.Cleanup(r.cleanup)
	return r
}

// run runs line with bash in the runner's directory and returns its
// combined output. Its output goes to a file, not a pipe, so that
// commands it leaves in the background (`strand peer start ... &`) do
// not hold the call.
func (r *docRunner) run(line string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, err := os.CreateTemp(r.t.TempDir(), "out")
	if err != nil {
		return "", err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = r.dir, r.env, f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Start()
	if err == nil {
		r.pgids = append(r.pgids, cmd.Process.Pid)
		err = cmd.Wait()
	}
	out, rerr := os.ReadFile(f.Name())
	if err == nil {
		err = rerr
	}
	return string(out), err
}

// cleanup stops the networks the page started and whatever its commands
// left running (nodes started by hand in the background).
func (r *docRunner) cleanup() {
	for _, net := range []string{"strand-net", "mynet"} {
		if _, err := os.Stat(filepath.Join(r.dir, net, "layout.json")); err == nil {
			if out, err := r.run("strand net down --purge --dir " + net); err != nil {
				r.t.Logf("cleanup: net down %s: %v\n%s", net, err, out)
			}
		}
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		alive := false
		for _, g := range r.pgids {
			if syscall.Kill(-g, sig) == nil {
				alive = true
			}
		}
		if !alive {
			return
		}
		time.Sleep(3 * time.Second)
	}
}

var normalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\S*/(strand-net|mynet)\b`), "$1"},
	{regexp.MustCompile(`\b\d+\.\d+\.\d+\.\d+:\d+\b`), "<addr>"},
	{regexp.MustCompile(`\b\d{4}-\d\d-\d\dT[0-9:.]+Z\b`), "<time>"},
	{regexp.MustCompile(`\b[0-9a-f]{12,}\b|\b[0-9a-f]{2,}…[0-9a-f]{2,}\b`), "<hex>"}, // whole or elided
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m)\b`), "<dur>"},
	{regexp.MustCompile(`\b(pid|process) \d+\b`), "$1 <n>"},
	{regexp.MustCompile(`\b\d{4,}\b`), "<n>"},
	{regexp.MustCompile(`Raft (leader|follower)`), "Raft <role>"},
}

// normalize rewrites what differs between runs (see the file's comment)
// and collapses white space. A table's PID column (found by its header)
// becomes <n>, as a PID of four or more digits anywhere does.
func normalize(lines []string) []string {
	out := make([]string, 0, len(lines))
	pidCol := -1
	for _, l := range lines {
		if strings.HasPrefix(l, "NODE ") {
			pidCol = strings.Index(l, " PID ") + 1
			if pidCol == 0 {
				pidCol = -1
			}
		} else if pidCol > 0 && len(l) > pidCol && l[pidCol] >= '0' && l[pidCol] <= '9' {
			end := pidCol
			for end < len(l) && l[end] >= '0' && l[end] <= '9' {
				end++
			}
			l = l[:pidCol] + "<n>" + l[end:]
		}
		for _, n := range normalizers {
			l = n.re.ReplaceAllString(l, n.with)
		}
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return out
}

// match checks that every line of want appears in got, in order; a want
// line "..." or "…" is skipped, and inside a line either stands for any
// text.
func match(want, got []string) error {
	i := 0
	for _, w := range want {
		if w == "..." || w == "…" || w == "" {
			continue
		}
		re := regexp.MustCompile("^" + strings.NewReplacer(`\.\.\.`, ".*", "…", ".*").Replace(regexp.QuoteMeta(w)) + "$")
		for i < len(got) && !re.MatchString(got[i]) {
			i++
		}
		if i == len(got) {
			return fmt.Errorf("no line matches %q (after the lines before it)", w)
		}
		i++
	}
	return nil
}
