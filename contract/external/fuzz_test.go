package external

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
)

// mapStub is a contract.Stub over a map that refuses what the endorser's
// stub refuses often enough for the decoder's tests: empty keys.
type mapStub struct{ state map[string][]byte }

func (s *mapStub) Function() string          { return "f" }
func (s *mapStub) Args() [][]byte            { return nil }
func (s *mapStub) TxID() string              { return "tx" }
func (s *mapStub) Channel() string           { return "ch" }
func (s *mapStub) Creator() contract.Creator { return contract.Creator{} }
func (s *mapStub) Timestamp() time.Time      { return time.Unix(1, 0) }

var errEmpty = errors.New("empty key")

func (s *mapStub) GetState(k string) ([]byte, error) {
	if k == "" {
		return nil, errEmpty
	}
	return s.state[k], nil
}
func (s *mapStub) GetMultipleStates(keys ...string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := s.GetState(k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
func (s *mapStub) PutState(k string, v []byte) error {
	if k == "" {
		return errEmpty
	}
	s.state[k] = v
	return nil
}
func (s *mapStub) DelState(k string) error { return s.PutState(k, nil) }
func (s *mapStub) GetStateByRange(start, end string, n int, bm string) (contract.Page, error) {
	return contract.Page{KVs: []contract.KV{{Key: start, Value: []byte(end)}}, Bookmark: bm}, nil
}
func (s *mapStub) SetEvent(string, []byte) error { return nil }

func reply(m *api.ContractReply) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func state(op *api.ContractStateRequest) *api.ContractReply {
	return &api.ContractReply{Call: 1, Kind: &api.ContractReply_State{State: op}}
}

// TestStep: the peer's handling of each message a server may send.
func TestStep(t *testing.T) {
	cl := &caller{stub: &mapStub{state: map[string][]byte{"a": []byte("1")}}, max: DefaultMaxMessageBytes}
	a, done, _, err := cl.step(state(&api.ContractStateRequest{Op: &api.ContractStateRequest_Get{Get: &api.StateGet{Key: "a"}}}))
	if err != nil || done || len(a.GetValues()) != 1 || string(a.Values[0].Value) != "1" || !a.Values[0].Found {
		t.Fatalf("get: %v %v %v", a, done, err)
	}
	if a, _, _, _ = cl.step(state(&api.ContractStateRequest{Op: &api.ContractStateRequest_Get{Get: &api.StateGet{Key: ""}}})); a.GetError() != "empty key" {
		t.Fatalf("refused get: %v, want the refusal as the answer's error", a)
	}
	if a, _, _, err = cl.step(state(&api.ContractStateRequest{Op: &api.ContractStateRequest_Put{Put: &api.StatePut{Key: ""}}})); a != nil || err != nil {
		t.Fatalf("refused put: %v %v, want no answer", a, err)
	}
	_, done, _, err = cl.step(&api.ContractReply{Call: 1, Kind: &api.ContractReply_Result{Result: &api.ContractResult{Payload: []byte("ok")}}})
	if !done || !errors.Is(err, errEmpty) {
		t.Fatalf("result after a refused put: %v %v, want the put's refusal", done, err)
	}
	cl.late = nil
	for _, c := range []struct {
		m    *api.ContractReply
		want string
	}{
		{&api.ContractReply{Call: 1}, "message of no kind"},
		{&api.ContractReply{Call: 1, Kind: &api.ContractReply_Hello{Hello: &api.ContractHello{Version: 1}}}, "a hello"},
		{state(&api.ContractStateRequest{}), "no operation"},
	} {
		if _, _, _, err := cl.step(c.m); !errors.Is(err, ErrProtocol) {
			t.Errorf("%v: %v, want ErrProtocol (%s)", c.m, err, c.want)
		}
	}
	_, done, _, err = cl.step(&api.ContractReply{Call: 1, Kind: &api.ContractReply_Result{Result: &api.ContractResult{Status: 302, Message: "m"}}})
	var ce *contract.Error
	if !done || !errors.As(err, &ce) || ce.Status != 500 {
		t.Fatalf("status 302: %v, want a contract error with status 500", err)
	}
}

// FuzzStep: the peer's decoder of a server's messages (the protocol's
// network-facing side) never panics, whatever the server sends, and a
// call either goes on, ends or fails with a named error.
func FuzzStep(f *testing.F) {
	f.Add(reply(state(&api.ContractStateRequest{Op: &api.ContractStateRequest_Get{Get: &api.StateGet{Key: "a"}}})))
	f.Add(reply(state(&api.ContractStateRequest{Op: &api.ContractStateRequest_GetMulti{GetMulti: &api.StateGetMulti{Keys: []string{"a", ""}}}})))
	f.Add(reply(state(&api.ContractStateRequest{Op: &api.ContractStateRequest_Range{Range: &api.StateRange{Start: "a", PageSize: 1 << 31}}})))
	f.Add(reply(state(&api.ContractStateRequest{Op: &api.ContractStateRequest_Put{Put: &api.StatePut{Key: "k", Value: []byte("v")}}})))
	f.Add(reply(state(&api.ContractStateRequest{Op: &api.ContractStateRequest_Event{Event: &api.StateEvent{Name: "e"}}})))
	f.Add(reply(&api.ContractReply{Call: 7, Kind: &api.ContractReply_Result{Result: &api.ContractResult{Status: 404, Message: "m"}}}))
	f.Add(reply(&api.ContractReply{Kind: &api.ContractReply_Hello{Hello: &api.ContractHello{Version: 9}}}))
	f.Add([]byte{0x1a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m api.ContractReply
		if proto.Unmarshal(b, &m) != nil {
			return
		}
		approxSize(&m)
		kindOf(&m)
		cl := &caller{stub: &mapStub{state: map[string][]byte{}}, max: DefaultMaxMessageBytes}
		a, done, _, err := cl.step(&m)
		if done && a != nil {
			t.Fatalf("a call that ended answers %v", a)
		}
		if err != nil && !done && !errors.Is(err, ErrProtocol) {
			t.Fatalf("an error that is no protocol error before the call's end: %v", err)
		}
	})
}

// TestDecodePackage: a package decodes only with an address and a
// certificate, and its hash is over its exact bytes.
func TestDecodePackage(t *testing.T) {
	for _, raw := range []string{``, `{}`, `{"address":"127.0.0.1:1"}`, `{"address":"nohost","root_cert":"x"}`,
		`{"address":"127.0.0.1:1","root_cert":"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"}`,
		`{"address":"127.0.0.1:1","root_cert":"","extra":1}`} {
		if _, err := DecodePackage([]byte(raw)); !errors.Is(err, ErrPackage) {
			t.Errorf("DecodePackage(%s) = %v, want ErrPackage", raw, err)
		}
	}
	if Hash([]byte("a")) != "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb" {
		t.Errorf("Hash is not SHA-256")
	}
}
