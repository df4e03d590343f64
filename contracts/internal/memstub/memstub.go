package memstub

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/contract"
)

// Stub is a map-backed contract.Stub. The zero value is not usable; call New.
type Stub struct {
	state map[string][]byte // committed

	// The call in progress.
	fn      string
	args    [][]byte
	txNum   int
	pending map[string][]byte // nil value: deleted
	reads   map[string]bool
	event   string

	// Creator is what Creator returns; tests may set it.
	CreatorID contract.Creator
}

// Epoch is the timestamp of transaction 0; transaction n is n seconds later.
var Epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// New returns an empty Stub.
func New() *Stub {
	return &Stub{
		state:     make(map[string][]byte),
		CreatorID: contract.Creator{Org: "Org1", Role: "client", Name: "user1"},
	}
}

// Call invokes fn(args...) on c as one transaction and commits its writes
// if it succeeds.
func (s *Stub) Call(c contract.Contract, fn string, args ...string) ([]byte, error) {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return s.CallBytes(c, fn, bs)
}

// CallBytes is Call with byte arguments.
func (s *Stub) CallBytes(c contract.Contract, fn string, args [][]byte) ([]byte, error) {
	s.txNum++
	s.fn, s.args = fn, args
	s.pending = make(map[string][]byte)
	s.reads = make(map[string]bool)
	s.event = ""
	out, err := c.Invoke(s)
	if err == nil {
		for k, v := range s.pending {
			if v == nil {
				delete(s.state, k)
			} else {
				s.state[k] = v
			}
		}
	}
	return out, err
}

// Reads returns the keys the last call read, sorted.
func (s *Stub) Reads() []string { return slices.Sorted(maps.Keys(s.reads)) }

// Writes returns the keys the last call wrote or deleted, sorted.
func (s *Stub) Writes() []string { return slices.Sorted(maps.Keys(s.pending)) }

// Event is the name of the last call's event, if it set one.
func (s *Stub) Event() string { return s.event }

// Get returns key's committed value, or nil.
func (s *Stub) Get(key string) []byte { return s.state[key] }

// Set writes key's committed value directly, outside any call.
func (s *Stub) Set(key string, value []byte) { s.state[key] = value }

// Keys returns the committed keys, sorted.
func (s *Stub) Keys() []string { return slices.Sorted(maps.Keys(s.state)) }

// Function implements contract.Stub.
func (s *Stub) Function() string { return s.fn }

// Args implements contract.Stub.
func (s *Stub) Args() [][]byte { return s.args }

// TxID implements contract.Stub.
func (s *Stub) TxID() string { return "tx" + strconv.Itoa(s.txNum) }

// Channel implements contract.Stub.
func (s *Stub) Channel() string { return "test" }

// Creator implements contract.Stub.
func (s *Stub) Creator() contract.Creator { return s.CreatorID }

// Timestamp implements contract.Stub.
func (s *Stub) Timestamp() time.Time { return Epoch.Add(time.Duration(s.txNum) * time.Second) }

// GetState implements contract.Stub.
func (s *Stub) GetState(key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	s.reads[key] = true
	v, ok := s.pending[key]
	if !ok {
		v = s.state[key]
	}
	if v == nil {
		return nil, nil
	}
	return append([]byte{}, v...), nil
}

// GetMultipleStates implements contract.Stub.
func (s *Stub) GetMultipleStates(keys ...string) ([][]byte, error) {
	vs := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := s.GetState(k)
		if err != nil {
			return nil, err
		}
		vs[i] = v
	}
	return vs, nil
}

// PutState implements contract.Stub.
func (s *Stub) PutState(key string, value []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if len(value) > contract.MaxValueBytes {
		return fmt.Errorf("memstub: value of %q is %d bytes: want at most %d", key, len(value), contract.MaxValueBytes)
	}
	s.pending[key] = append([]byte{}, value...)
	return nil
}

// DelState implements contract.Stub.
func (s *Stub) DelState(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	s.pending[key] = nil
	return nil
}

// GetStateByRange implements contract.Stub over committed state plus the
// call's writes. The bookmark is the first key of the next page.
func (s *Stub) GetStateByRange(start, end string, pageSize int, bookmark string) (contract.Page, error) {
	if pageSize < 0 {
		return contract.Page{}, fmt.Errorf("memstub: page size %d: want 0 (no limit) or more", pageSize)
	}
	from := max(start, bookmark)
	var keys []string
	for k := range s.state {
		if _, ok := s.pending[k]; !ok && inRange(k, from, end) {
			keys = append(keys, k)
		}
	}
	for k, v := range s.pending {
		if v != nil && inRange(k, from, end) {
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
		v, _ := s.GetState(k)
		p.KVs = append(p.KVs, contract.KV{Key: k, Value: v})
	}
	return p, nil
}

// SetEvent implements contract.Stub.
func (s *Stub) SetEvent(name string, payload []byte) error {
	s.event = name
	return nil
}

func inRange(k, from, end string) bool { return k >= from && (end == "" || k < end) }

func checkKey(key string) error {
	if key == "" || len(key) > contract.MaxKeyBytes {
		return fmt.Errorf("memstub: key of %d bytes: want 1 to %d", len(key), contract.MaxKeyBytes)
	}
	return nil
}

// WantError fails the test unless err is a *contract.Error with the given
// status whose message contains has; call names the call in the message.
func WantError(t testing.TB, call string, err error, status int, has string) {
	t.Helper()
	var ce *contract.Error
	if !errors.As(err, &ce) || ce.Status != status || !strings.Contains(ce.Message, has) {
		t.Fatalf("%s = %v, want status %d containing %q", call, err, status, has)
	}
}
