package policy

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/identity"
)

func TestSyntaxErrorMessage(t *testing.T) {
	_, err := Parse("AND('A.peer' 'B.peer')")
	want := `policy: at position 13 of "AND('A.peer' 'B.peer')": expected ',' or ')', found "'B.peer'"`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
	var se *SyntaxError
	if !errors.As(err, &se) || se.Pos != 13 {
		t.Fatalf("error %T %+v, want *SyntaxError at 13", err, err)
	}
	// A long expression is shown as a window around the position.
	long := "OR(" + strings.Repeat("'A.peer',", 20) + "'B.peer' 'C.peer')"
	_, err = Parse(long)
	if err == nil || !strings.Contains(err.Error(), `of "...`) || !strings.Contains(err.Error(), `'B.peer' 'C.peer')"`) {
		t.Fatalf("long expression error = %v", err)
	}
}

func TestLimits(t *testing.T) {
	nest := func(depth int) string {
		return strings.Repeat("AND(", depth) + "'A.peer'" + strings.Repeat(")", depth)
	}
	list := func(n int) string {
		return "OR(" + strings.Repeat("'A.peer',", n-1) + "'A.peer')"
	}
	for _, tc := range []struct {
		name, expr string
		wantPos    int
		wantMsg    string
	}{
		{"depth 32", nest(MaxDepth), -1, ""},
		{"depth 33", nest(MaxDepth + 1), 4 * MaxDepth, "nest more than 32"},
		{"64 principals", list(MaxPrincipals), -1, ""},
		{"65 principals", list(MaxPrincipals + 1), 3 + 9*MaxPrincipals, "more than 64 principals"},
		{"4096 bytes", "'A.peer'" + strings.Repeat(" ", MaxExprBytes-8), -1, ""},
		{"4097 bytes", "'A.peer'" + strings.Repeat(" ", MaxExprBytes-7), MaxExprBytes, "4097 bytes, expected at most 4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(tc.expr)
			if tc.wantPos < 0 {
				if err != nil {
					t.Fatal(err)
				}
				if q := MustParse(p.String()); q.String() != p.String() {
					t.Fatalf("re-parse gives %s", q)
				}
				return
			}
			var se *SyntaxError
			if !errors.As(err, &se) || se.Pos != tc.wantPos || !strings.Contains(se.Msg, tc.wantMsg) {
				t.Fatalf("error = %v, want position %d and %q", err, tc.wantPos, tc.wantMsg)
			}
		})
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("MustParse of a bad expression did not panic")
		}
	}()
	MustParse("AND(")
}

func TestOrgsIsACopy(t *testing.T) {
	p := MustParse("OR('B.peer','A.peer','B.admin')")
	o := p.Orgs()
	o[0] = "Z"
	if got := strings.Join(p.Orgs(), ","); got != "A,B" {
		t.Fatalf("Orgs = %s after modifying a returned slice", got)
	}
}

func TestEvaluateAllocsNothing(t *testing.T) {
	p := MustParse("OutOf(2, AND('Org1.peer', 'Org2.peer'), OR('Org3.member', 'Org4.admin'), 'Org5.peer')")
	signers := []Signer{{"Org1", identity.RolePeer}, {"Org2", identity.RolePeer}, {"Org4", identity.RoleAdmin}}
	if !p.Evaluate(signers) {
		t.Fatal("policy not satisfied")
	}
	if a := testing.AllocsPerRun(1000, func() { p.Evaluate(signers) }); a != 0 {
		t.Fatalf("Evaluate allocates %v times per run, want 0", a)
	}
}

func TestOnlyFirst64SignersCount(t *testing.T) {
	p := MustParse("'B.peer'")
	signers := make([]Signer, 65)
	for i := range signers {
		signers[i] = Signer{"A", identity.RolePeer}
	}
	signers[64] = Signer{"B", identity.RolePeer}
	if p.Evaluate(signers) {
		t.Fatal("the 65th signer was considered")
	}
	signers[63] = signers[64]
	if !p.Evaluate(signers) {
		t.Fatal("the 64th signer was not considered")
	}
}

// refEval is Fabric's cauthdsl written out literally, with []bool used
// sets copied at every OutOf, as the reference Evaluate must agree with.
func refEval(p *Policy, i int32, signers []Signer, used []bool) bool {
	nd := p.nodes[i]
	if nd.kind == kindPrincipal {
		for j, s := range signers {
			if used[j] {
				continue
			}
			if s.Org == nd.p.Org && (nd.p.Role == identity.RoleMember || s.Role == nd.p.Role) {
				used[j] = true
				return true
			}
		}
		return false
	}
	verified := 0
	tentative := make([]bool, len(used))
	for _, k := range p.kids[nd.first:nd.end] {
		copy(tentative, used)
		if refEval(p, k, signers, tentative) {
			verified++
			copy(used, tentative)
		}
	}
	return verified >= int(nd.n)
}

func randExpr(r *rand.Rand, depth int) string {
	if depth == 0 || r.Intn(3) == 0 {
		return fmt.Sprintf("'%c.%s'", 'A'+r.Intn(3), identity.Role(r.Intn(5)))
	}
	n := 1 + r.Intn(3)
	subs := make([]string, n)
	for i := range subs {
		subs[i] = randExpr(r, depth-1)
	}
	switch r.Intn(3) {
	case 0:
		return "AND(" + strings.Join(subs, ",") + ")"
	case 1:
		return "OR(" + strings.Join(subs, ",") + ")"
	}
	return fmt.Sprintf("OutOf(%d,%s)", 1+r.Intn(n), strings.Join(subs, ","))
}

func TestEvaluateMatchesReference(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	agree := map[bool]int{}
	for range 3000 {
		p := MustParse(randExpr(r, 4))
		signers := make([]Signer, r.Intn(8))
		for i := range signers {
			signers[i] = Signer{string(rune('A' + r.Intn(3))), identity.Role(1 + r.Intn(4))}
		}
		want := refEval(p, p.root(), signers, make([]bool, len(signers)))
		if got := p.Evaluate(signers); got != want {
			t.Fatalf("%s with %v: Evaluate = %v, reference = %v", p, signers, got, want)
		}
		agree[want]++
	}
	if agree[true] < 100 || agree[false] < 100 {
		t.Fatalf("random cases too lopsided to mean much: %v", agree)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"'Org1.peer'",
		`"Org1.member"`,
		"AND('Org1.peer', 'Org2.peer')",
		"or('A.admin',\"B.client\")",
		"OutOf(2, 'A.peer', 'B.peer', 'C.peer')",
		"AND(OR('A.peer','B.peer'), OutOf(1, 'C.member', AND('D.admin')))",
		"'org.example.com.orderer'",
		"OUTOF(003,'A.peer','B.peer','C.orderer')",
		"AND('A.peer' 'B.peer')",
		"OutOf(0,'A.peer')",
		"AND(",
		"'A.peer",
		"",
		"\x00\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		p, err := Parse(expr)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Pos < 0 || se.Pos > len(expr) {
				t.Fatalf("Parse(%q) error %v: want *SyntaxError with 0 <= Pos <= len", expr, err)
			}
			_ = err.Error()
			return
		}
		s := p.String()
		if len(s) > len(expr) {
			t.Fatalf("canonical form %q is longer than input %q", s, expr)
		}
		q, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q) accepted, but its String %q fails: %v", expr, s, err)
		}
		if q.String() != s {
			t.Fatalf("String not stable: %q -> %q -> %q", expr, s, q.String())
		}
		p.Evaluate([]Signer{{"A", identity.RolePeer}, {"B", identity.RoleAdmin}})
	})
}

func BenchmarkEvaluateAND2(b *testing.B) {
	p := MustParse("AND('Org1.peer','Org2.peer')")
	signers := []Signer{{"Org1", identity.RolePeer}, {"Org2", identity.RolePeer}}
	b.ReportAllocs()
	for b.Loop() {
		if !p.Evaluate(signers) {
			b.Fatal("not satisfied")
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		MustParse("AND(OR('Org1.peer','Org2.peer'),OutOf(2,'Org3.peer','Org4.peer','Org5.admin'))")
	}
}
