package wasm_test

import (
	"sort"
	"strings"
	"time"

	"github.com/strand-ledger/strand/contract"
)

// mapStub is a contract.Stub over a map, enough for the runtime's tests;
// the endorser's own stub runs modules in the endorser's tests.
type mapStub struct {
	fn    string
	args  [][]byte
	txID  string
	ts    time.Time
	state map[string][]byte
	event string
}

func newStub(fn string, args ...string) *mapStub {
	s := &mapStub{fn: fn, txID: "tx1", ts: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), state: map[string][]byte{}}
	for _, a := range args {
		s.args = append(s.args, []byte(a))
	}
	return s
}

func (s *mapStub) Function() string { return s.fn }
func (s *mapStub) Args() [][]byte   { return s.args }
func (s *mapStub) TxID() string     { return s.txID }
func (s *mapStub) Channel() string  { return "ch" }
func (s *mapStub) Creator() contract.Creator {
	return contract.Creator{Org: "Org1", Role: "client", Name: "u", Cert: []byte{1, 2}}
}
func (s *mapStub) Timestamp() time.Time { return s.ts }

func (s *mapStub) GetState(key string) ([]byte, error) {
	if err := contract.CheckKey("key", key); err != nil {
		return nil, err
	}
	return s.state[key], nil
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

func (s *mapStub) PutState(key string, value []byte) error {
	if err := contract.CheckKey("key", key); err != nil {
		return err
	}
	s.state[key] = append([]byte{}, value...)
	return nil
}

func (s *mapStub) DelState(key string) error {
	delete(s.state, key)
	return nil
}

func (s *mapStub) GetStateByRange(start, end string, pageSize int, bookmark string) (contract.Page, error) {
	keys := make([]string, 0, len(s.state))
	for k := range s.state {
		if k >= max(start, bookmark) && (end == "" || k < end) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var p contract.Page
	for i, k := range keys {
		if pageSize > 0 && i == pageSize {
			p.Bookmark = k
			break
		}
		p.KVs = append(p.KVs, contract.KV{Key: k, Value: s.state[k]})
	}
	return p, nil
}

func (s *mapStub) SetEvent(name string, payload []byte) error {
	s.event = name + "=" + strings.Clone(string(payload))
	return nil
}
