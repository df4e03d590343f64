package endorser

import (
	"bytes"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// stub is one contract call's contract.Stub: committed state of the
// contract's namespace plus the call's own writes, recording what it reads
// and writes. Every method takes mu and refuses to act once closed is set,
// so the recorded sets cannot change after the call is judged.
type stub struct {
	state   State
	ns      string
	fn      string
	args    [][]byte
	txID    string
	channel string
	creator contract.Creator
	ts      time.Time

	closed    atomic.Bool // set once; also read without mu to stop long scans
	abandoned atomic.Bool // set once, before closed, by abandon

	mu struct {
		sync.Mutex
		reads  map[string]*api.Version // first read wins; nil: absent
		writes map[string]write        // last write wins
		ranges []*api.RangeRead        // in call order
		event  *api.Event
		err    error // the first state read error
	}
}

// write is a pending write; value is owned by the stub.
type write struct {
	value []byte
	del   bool
}

var _ contract.Stub = (*stub)(nil)

func newStub(state State, p *api.Proposal, m *identity.Member) *stub {
	h := p.GetHeader()
	st := &stub{
		state: state, ns: p.Contract, fn: p.Function, args: p.Args,
		txID: h.GetTxId(), channel: h.GetChannel(),
		creator: contract.Creator{Org: m.Org, Role: m.Role.String(), Name: m.Name, Cert: bytes.Clone(h.GetCreator().GetCert())},
		ts:      time.Unix(0, h.GetTimestampUnixNano()).UTC(),
	}
	st.mu.reads = make(map[string]*api.Version)
	st.mu.writes = make(map[string]write)
	return st
}

func (s *stub) Function() string          { return s.fn }
func (s *stub) Args() [][]byte            { return s.args }
func (s *stub) TxID() string              { return s.txID }
func (s *stub) Channel() string           { return s.channel }
func (s *stub) Creator() contract.Creator { return s.creator }
func (s *stub) Timestamp() time.Time      { return s.ts }
func (s *stub) close()                    { s.closed.Store(true) }

// abandon closes the stub of a call that outlived its deadline: the
// contract's next stub call ends its goroutine (see run).
func (s *stub) abandon() {
	s.abandoned.Store(true)
	s.closed.Store(true)
}

// over is the error of a stub call after the call ended; it does not
// return to the goroutine of an abandoned call, which it ends.
func (s *stub) over() error {
	if s.abandoned.Load() {
		runtime.Goexit()
	}
	return fmt.Errorf("%w: contract %q function %q called the stub after its call ended", ErrSimulationOver, s.ns, s.fn)
}

func checkValueSize(what string, n int) error {
	if n > contract.MaxValueBytes {
		return fmt.Errorf("%w: %s of %d bytes, expected at most %d", ErrValueTooLarge, what, n, contract.MaxValueBytes)
	}
	return nil
}

func checkKey(key string) error {
	if len(key) == 0 || len(key) > contract.MaxKeyBytes {
		return fmt.Errorf("%w: key of %d bytes (%.32q), expected 1 to %d bytes", ErrBadKey, len(key), key, contract.MaxKeyBytes)
	}
	return nil
}

// lock takes mu unless the call is over.
func (s *stub) lock() error {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return s.over()
	}
	return nil
}

// GetState implements contract.Stub.
func (s *stub) GetState(key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if w, ok := s.mu.writes[key]; ok {
		return w.get(), nil
	}
	v, found, err := s.state.Get(s.ns, key)
	if err != nil {
		return nil, s.failedLocked(err, "reading key %q", key)
	}
	return s.readLocked(key, v, found), nil
}

// GetMultipleStates implements contract.Stub. It uses the State's GetMany
// when it has one.
func (s *stub) GetMultipleStates(keys ...string) ([][]byte, error) {
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return nil, err
		}
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([][]byte, len(keys))
	var todo []statedb.Key // committed lookups, in order
	var at []int           // their index in keys
	for i, k := range keys {
		if w, ok := s.mu.writes[k]; ok {
			out[i] = w.get()
			continue
		}
		todo = append(todo, statedb.Key{Namespace: s.ns, Key: k})
		at = append(at, i)
	}
	res := make([]statedb.Result, len(todo))
	if mg, ok := s.state.(manyGetter); ok && len(todo) > 0 {
		if err := mg.GetMany(todo, res); err != nil {
			return nil, s.failedLocked(err, "reading %d keys", len(todo))
		}
	} else {
		for i, k := range todo {
			v, found, err := s.state.Get(s.ns, k.Key)
			if err != nil {
				return nil, s.failedLocked(err, "reading key %q", k.Key)
			}
			res[i] = statedb.Result{Value: v, Found: found}
		}
	}
	for j, r := range res {
		out[at[j]] = s.readLocked(todo[j].Key, r.Value, r.Found)
	}
	return out, nil
}

// readLocked records a committed read (the first one of a key wins) and
// returns the value as the contract sees it.
func (s *stub) readLocked(key string, v statedb.Value, found bool) []byte {
	if _, ok := s.mu.reads[key]; !ok {
		var ver *api.Version
		if found {
			ver = &api.Version{Block: v.Version.Block, Tx: v.Version.Tx}
		}
		s.mu.reads[key] = ver
	}
	if !found {
		return nil
	}
	if v.Data == nil {
		return []byte{}
	}
	return v.Data
}

// failedLocked records a state read error, which fails the call.
func (s *stub) failedLocked(err error, format string, args ...any) error {
	err = fmt.Errorf("%s in namespace %q: %w", fmt.Sprintf(format, args...), s.ns, err)
	if s.mu.err == nil {
		s.mu.err = err
	}
	return err
}

// stateErr returns the first state read error of the call.
func (s *stub) stateErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.err
}

// get returns the value as the contract sees it: a copy, or nil if deleted.
func (w write) get() []byte {
	if w.del {
		return nil
	}
	return bytes.Clone(w.value) // never nil for a put: Clone keeps non-nil
}

// PutState implements contract.Stub.
func (s *stub) PutState(key string, value []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkValueSize(fmt.Sprintf("value of key %.32q", key), len(value)); err != nil {
		return err
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	v := bytes.Clone(value)
	if v == nil {
		v = []byte{}
	}
	s.mu.writes[key] = write{value: v}
	return nil
}

// DelState implements contract.Stub.
func (s *stub) DelState(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.mu.writes[key] = write{del: true}
	return nil
}

// SetEvent implements contract.Stub.
func (s *stub) SetEvent(name string, payload []byte) error {
	if name == "" {
		return fmt.Errorf("%w: empty event name, expected a non-empty name", ErrBadEvent)
	}
	if err := checkValueSize(fmt.Sprintf("payload of event %.32q", name), len(payload)); err != nil {
		return err
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.mu.event = &api.Event{Name: name, Payload: bytes.Clone(payload)}
	return nil
}

// finish returns the call's read/write set and event. The stub must be
// closed. The set always exists (the validator requires one); it has one
// namespace, the contract's, unless the call touched nothing.
func (s *stub) finish() (*api.RWSet, *api.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.err != nil {
		return nil, nil, stateRefusal(fmt.Sprintf("contract %q function %q", s.ns, s.fn), s.mu.err)
	}
	rw := &api.RWSet{}
	if len(s.mu.reads) == 0 && len(s.mu.writes) == 0 && len(s.mu.ranges) == 0 {
		return rw, s.mu.event, nil
	}
	ns := &api.NsRWSet{Namespace: s.ns, RangeReads: s.mu.ranges}
	for _, k := range sortedKeys(s.mu.reads) {
		ns.Reads = append(ns.Reads, &api.KVRead{Key: k, Version: s.mu.reads[k]})
	}
	for _, k := range sortedKeys(s.mu.writes) {
		w := s.mu.writes[k]
		kw := &api.KVWrite{Key: k, IsDelete: w.del}
		if !w.del {
			kw.Value = w.value
		}
		ns.Writes = append(ns.Writes, kw)
	}
	rw.Namespaces = []*api.NsRWSet{ns}
	return rw, s.mu.event, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
