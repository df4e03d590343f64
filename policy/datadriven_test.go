package policy

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/strand-ledger/strand/identity"
)

// TestDataDriven runs testdata/*.txt with github.com/cockroachdb/datadriven
// (go test -rewrite regenerates the expected output). Commands:
//
//	parse   each input line is an expression ("<empty>" for ""); the output
//	        is its canonical form and orgs, or its error.
//	eval    the first input line is an expression; each further line is a
//	        signer set, space-separated Org.role ("-" for none), and the
//	        output echoes it with the verdict.
func TestDataDriven(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				return strings.Join(run(t, d), "\n")
			})
		})
	}
}

func run(t *testing.T, d *datadriven.TestData) []string {
	var inputs, out []string
	if d.Input != "" {
		inputs = strings.Split(d.Input, "\n")
	}
	switch d.Cmd {
	case "parse":
		for _, in := range inputs {
			if in == "<empty>" {
				in = ""
			}
			p, err := Parse(in)
			var se *SyntaxError
			switch {
			case errors.As(err, &se):
				out = append(out, fmt.Sprintf("error at %d: %s", se.Pos, se.Msg))
			case err != nil:
				d.Fatalf(t, "Parse(%q) returned %T, want *SyntaxError", in, err)
			default:
				out = append(out, fmt.Sprintf("%s orgs=%s", p, strings.Join(p.Orgs(), ",")))
			}
		}
	case "eval":
		if len(inputs) == 0 {
			d.Fatalf(t, "eval needs an expression as its first input line")
		}
		p, err := Parse(inputs[0])
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		for _, in := range inputs[1:] {
			out = append(out, fmt.Sprintf("%s => %v", in, p.Evaluate(parseSigners(t, d, in))))
		}
	default:
		d.Fatalf(t, "unknown command %q, expected parse or eval", d.Cmd)
	}
	return out
}

func parseSigners(t *testing.T, d *datadriven.TestData, line string) []Signer {
	var ss []Signer
	for _, f := range strings.Fields(line) {
		if f == "-" {
			continue
		}
		dot := strings.LastIndexByte(f, '.')
		if dot < 0 {
			d.Fatalf(t, "signer %q, expected Org.role", f)
		}
		role, err := identity.ParseRole(f[dot+1:])
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		ss = append(ss, Signer{Org: f[:dot], Role: role})
	}
	return ss
}
