package policy

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/identity"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata/*.txt")

// A testdata file is a sequence of blocks separated by blank lines; lines
// starting with '#' between blocks are comments. A block is
//
//	<command>
//	<input lines>
//	----
//	<expected output lines>
//
// Commands:
//
//	parse          each input line is an expression ("<empty>" for ""); the
//	               output is its canonical form and orgs, or its error.
//	eval <expr>    each input line is a signer set, space-separated Org.role
//	               ("-" for none); the output echoes it with the verdict.
type block struct {
	comments []string
	cmd      string
	inputs   []string
	want     []string
	line     int
}

func readBlocks(t *testing.T, path string) []block {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks   []block
		cur      *block
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
			blocks = append(blocks, block{comments: comments, cmd: line, line: n})
			cur, comments, inOutput = &blocks[len(blocks)-1], nil, false
		case line == "----" && !inOutput:
			inOutput = true
		case inOutput && line == "":
			cur = nil
		case inOutput:
			cur.want = append(cur.want, line)
		default:
			cur.inputs = append(cur.inputs, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

func writeBlocks(t *testing.T, path string, blocks []block) {
	var b strings.Builder
	for i, bl := range blocks {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, c := range bl.comments {
			b.WriteString(c + "\n")
		}
		b.WriteString(bl.cmd + "\n")
		for _, in := range bl.inputs {
			b.WriteString(in + "\n")
		}
		b.WriteString("----\n")
		for _, w := range bl.want {
			b.WriteString(w + "\n")
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDataDriven(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			blocks := readBlocks(t, path)
			for i := range blocks {
				bl := &blocks[i]
				got := run(t, bl)
				if *rewrite {
					bl.want = got
					continue
				}
				if strings.Join(got, "\n") != strings.Join(bl.want, "\n") {
					t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, bl.line, bl.cmd,
						strings.Join(got, "\n"), strings.Join(bl.want, "\n"))
				}
			}
			if *rewrite {
				writeBlocks(t, path, blocks)
			}
		})
	}
}

func run(t *testing.T, bl *block) []string {
	var out []string
	switch cmd, arg, _ := strings.Cut(bl.cmd, " "); cmd {
	case "parse":
		for _, in := range bl.inputs {
			if in == "<empty>" {
				in = ""
			}
			p, err := Parse(in)
			var se *SyntaxError
			switch {
			case errors.As(err, &se):
				out = append(out, fmt.Sprintf("error at %d: %s", se.Pos, se.Msg))
			case err != nil:
				t.Fatalf("Parse(%q) returned %T, want *SyntaxError", in, err)
			default:
				out = append(out, fmt.Sprintf("%s orgs=%s", p, strings.Join(p.Orgs(), ",")))
			}
		}
	case "eval":
		p, err := Parse(arg)
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		for _, in := range bl.inputs {
			out = append(out, fmt.Sprintf("%s => %v", in, p.Evaluate(parseSigners(t, in))))
		}
	default:
		t.Fatalf("line %d: unknown command %q, expected parse or eval", bl.line, bl.cmd)
	}
	return out
}

func parseSigners(t *testing.T, line string) []Signer {
	var ss []Signer
	for _, f := range strings.Fields(line) {
		if f == "-" {
			continue
		}
		dot := strings.LastIndexByte(f, '.')
		if dot < 0 {
			t.Fatalf("signer %q, expected Org.role", f)
		}
		role, err := identity.ParseRole(f[dot+1:])
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, Signer{Org: f[:dot], Role: role})
	}
	return ss
}
