package policy

import (
	"fmt"
	"strings"

	"github.com/strand-ledger/strand/identity"
)

// Limits on what Parse accepts.
const (
	MaxExprBytes  = 4096
	MaxDepth      = 32
	MaxPrincipals = 64
)

// SyntaxError is the error Parse returns: Pos is the byte offset in Expr of
// the offending token.
type SyntaxError struct {
	Expr string
	Pos  int
	Msg  string
}

// Error quotes the expression, or a window of 80 bytes around Pos when the
// expression is longer.
func (e *SyntaxError) Error() string {
	expr := e.Expr
	if len(expr) > 80 {
		lo, hi := max(0, e.Pos-40), min(len(expr), e.Pos+40)
		expr = expr[lo:hi]
		if lo > 0 {
			expr = "..." + expr
		}
		if hi < len(e.Expr) {
			expr += "..."
		}
	}
	return fmt.Sprintf("policy: at position %d of %q: %s", e.Pos, expr, e.Msg)
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tNumber
	tString
	tLParen
	tRParen
	tComma
	tIllegal
)

type token struct {
	kind tokKind
	pos  int
	text string // the token as written; for tString including the quotes
}

func (t token) String() string {
	if t.kind == tEOF {
		return "end of expression"
	}
	return fmt.Sprintf("%q", t.text)
}

// parser is a recursive-descent parser that emits nodes as it goes.
type parser struct {
	expr       string
	off        int
	tok        token // current token
	p          *Policy
	principals int
	err        *SyntaxError
}

func isSpace(c byte) bool  { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isOrgByte(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '.' || c == '-' || c == '_'
}

// next scans the next token into p.tok.
func (ps *parser) next() {
	s := ps.expr
	for ps.off < len(s) && isSpace(s[ps.off]) {
		ps.off++
	}
	start := ps.off
	if start == len(s) {
		ps.tok = token{kind: tEOF, pos: start}
		return
	}
	c := s[start]
	kind, end := tIllegal, start+1
	switch {
	case c == '(':
		kind = tLParen
	case c == ')':
		kind = tRParen
	case c == ',':
		kind = tComma
	case isLetter(c):
		kind = tIdent
		for end < len(s) && (isLetter(s[end]) || isDigit(s[end])) {
			end++
		}
	case isDigit(c):
		kind = tNumber
		for end < len(s) && isDigit(s[end]) {
			end++
		}
	case c == '\'' || c == '"':
		kind = tString
		i := strings.IndexByte(s[end:], c)
		if i < 0 {
			end = len(s)
			kind = tIllegal
			ps.fail(start, fmt.Sprintf("unterminated principal, expected a closing %c", c))
		} else {
			end += i + 1
		}
	}
	ps.off = end
	ps.tok = token{kind: kind, pos: start, text: s[start:end]}
}

// fail records the first error.
func (ps *parser) fail(pos int, msg string) {
	if ps.err == nil {
		ps.err = &SyntaxError{Expr: ps.expr, Pos: pos, Msg: msg}
	}
}

func (ps *parser) unexpected(want string) {
	ps.fail(ps.tok.pos, fmt.Sprintf("expected %s, found %s", want, ps.tok))
}

// expect consumes a token of kind k or records an error.
func (ps *parser) expect(k tokKind, want string) bool {
	if ps.err != nil {
		return false
	}
	if ps.tok.kind != k {
		ps.unexpected(want)
		return false
	}
	ps.next()
	return ps.err == nil
}

const wantExpr = "AND, OR, OutOf or a quoted principal such as 'Org1.peer'"

// parseExpr parses one expression at nesting depth depth and returns its
// node index, or -1 after recording an error.
func (ps *parser) parseExpr(depth int) int32 {
	if ps.err != nil {
		return -1
	}
	tok := ps.tok
	switch tok.kind {
	case tString:
		ps.next()
		return ps.parsePrincipal(tok)
	case tIdent:
		var kind nodeKind
		switch {
		case strings.EqualFold(tok.text, "AND"):
			kind = kindAND
		case strings.EqualFold(tok.text, "OR"):
			kind = kindOR
		case strings.EqualFold(tok.text, "OutOf"):
			kind = kindOutOf
		default:
			ps.unexpected(wantExpr)
			return -1
		}
		if depth >= MaxDepth {
			ps.fail(tok.pos, fmt.Sprintf("operators nest more than %d deep", MaxDepth))
			return -1
		}
		ps.next()
		return ps.parseOperator(kind, depth+1)
	}
	ps.unexpected(wantExpr)
	return -1
}

// parseOperator parses "(" [n ","] expr {"," expr} ")" after a keyword.
func (ps *parser) parseOperator(kind nodeKind, depth int) int32 {
	if !ps.expect(tLParen, "'('") {
		return -1
	}
	n, nTok := 0, ps.tok
	if kind == kindOutOf {
		if ps.tok.kind != tNumber {
			ps.unexpected("the number n of OutOf(n, ...)")
			return -1
		}
		for _, c := range []byte(nTok.text) {
			n = min(n*10+int(c-'0'), MaxExprBytes) // clamp: only 1..64 can be valid
		}
		ps.next()
		if !ps.expect(tComma, "','") {
			return -1
		}
	}
	var kids []int32
	for {
		k := ps.parseExpr(depth)
		if k < 0 {
			return -1
		}
		kids = append(kids, k)
		if ps.tok.kind == tComma {
			ps.next()
			continue
		}
		if !ps.expect(tRParen, "',' or ')'") {
			return -1
		}
		break
	}
	switch kind {
	case kindAND:
		n = len(kids)
	case kindOR:
		n = 1
	default:
		if n < 1 || n > len(kids) {
			ps.fail(nTok.pos, fmt.Sprintf("OutOf needs 1 <= n <= %d (its number of sub-expressions), found %s", len(kids), nTok.text))
			return -1
		}
	}
	first := int32(len(ps.p.kids))
	ps.p.kids = append(ps.p.kids, kids...)
	ps.p.nodes = append(ps.p.nodes, node{kind: kind, n: int32(n), first: first, end: int32(len(ps.p.kids))})
	return int32(len(ps.p.nodes) - 1)
}

// parsePrincipal checks a quoted principal token and emits its node.
func (ps *parser) parsePrincipal(tok token) int32 {
	ps.principals++
	if ps.principals > MaxPrincipals {
		ps.fail(tok.pos, fmt.Sprintf("more than %d principals", MaxPrincipals))
		return -1
	}
	body := tok.text[1 : len(tok.text)-1]
	dot := strings.LastIndexByte(body, '.')
	if dot < 0 {
		ps.fail(tok.pos, fmt.Sprintf("principal %s has no role, expected 'Org.role'", tok.text))
		return -1
	}
	org, roleName := body[:dot], body[dot+1:]
	if org == "" {
		ps.fail(tok.pos, fmt.Sprintf("principal %s has an empty org, expected 'Org.role'", tok.text))
		return -1
	}
	for i := 0; i < len(org); i++ {
		if !isOrgByte(org[i]) {
			ps.fail(tok.pos+1+i, fmt.Sprintf("org %q of principal %s has byte %q, expected letters, digits, '.', '-' or '_'", org, tok.text, org[i]))
			return -1
		}
	}
	role, err := identity.ParseRole(roleName)
	if err != nil {
		ps.fail(tok.pos+1+dot+1, fmt.Sprintf("principal %s has role %q, expected one of member, admin, client, peer, orderer", tok.text, roleName))
		return -1
	}
	ps.p.nodes = append(ps.p.nodes, node{kind: kindPrincipal, p: Principal{Org: org, Role: role}})
	return int32(len(ps.p.nodes) - 1)
}
