package node

import (
	"errors"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/contract"
)

// kvStub serves one call over a map.
type kvStub struct {
	contract.Stub
	fn    string
	state map[string]string
}

func (s *kvStub) Function() string { return s.fn }
func (s *kvStub) GetState(k string) ([]byte, error) {
	v, ok := s.state[k]
	if !ok {
		return nil, nil
	}
	return []byte(v), nil
}
func (s *kvStub) PutState(k string, v []byte) error { s.state[k] = string(v); return nil }

// echo answers with the function's name.
type echo struct{}

func (echo) Invoke(s contract.Stub) ([]byte, error) { return []byte(s.Function()), nil }

// TestInitGuard: until init ran under the definition's sequence only init
// is served; then init is refused and the rest served; an upgrade whose
// definition names init needs it again.
func TestInitGuard(t *testing.T) {
	state := map[string]string{}
	call := func(g initGuard, fn string) (string, error) {
		out, err := g.Invoke(&kvStub{fn: fn, state: state})
		return string(out), err
	}
	refused := func(err error, status int, has string) bool {
		var ce *contract.Error
		return errors.As(err, &ce) && ce.Status == status && strings.Contains(ce.Message, has)
	}
	g1 := newInitGuard(echo{}, "kv", "setup", 1)
	if _, err := call(g1, "put"); !refused(err, 412, `"put" refused: its definition names init function "setup"`) {
		t.Fatalf("put before init = %v, want 412", err)
	}
	if out, err := call(g1, "setup"); err != nil || out != "setup" || state[InitKey] != "1" {
		t.Fatalf("init = %q, %v; %s = %q: want it served and sequence 1 recorded", out, err, InitKey, state[InitKey])
	}
	if out, err := call(g1, "put"); err != nil || out != "put" {
		t.Fatalf("put after init = %q, %v", out, err)
	}
	if _, err := call(g1, "setup"); !refused(err, 409, "already ran") {
		t.Fatalf("init again = %v, want 409", err)
	}
	g2 := newInitGuard(echo{}, "kv", "setup", 2)
	if _, err := call(g2, "put"); !refused(err, 412, "sequence 2") {
		t.Fatalf("put after an upgrade = %v, want 412 until init runs again", err)
	}
}
