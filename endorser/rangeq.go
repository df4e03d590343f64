package endorser

import (
	"fmt"
	"sort"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// GetStateByRange implements contract.Stub: committed keys of [start, end)
// merged with the call's own writes in that range (its puts shown, its
// deletes hidden), from bookmark if given, up to pageSize keys (0: all).
//
// To say whether more keys follow, it looks one key past a full page; that
// key becomes the bookmark. Every committed key visited, the bookmark
// included, is recorded with its version (see doc.go for how the bound is
// recorded so the validator's re-scan covers exactly what was observed).
func (s *stub) GetStateByRange(start, end string, pageSize int, bookmark string) (contract.Page, error) {
	if pageSize < 0 {
		return contract.Page{}, fmt.Errorf("%w: page size %d, expected 0 (no limit) or more", ErrBadRange, pageSize)
	}
	if end != "" && start >= end {
		return contract.Page{}, fmt.Errorf("%w: start %.32q is not before end %.32q, expected start < end or an empty end", ErrBadRange, start, end)
	}
	from := start
	if bookmark != "" {
		if bookmark < start || (end != "" && bookmark >= end) {
			return contract.Page{}, fmt.Errorf("%w: bookmark %.32q lies outside [%.32q, %.32q), expected one returned by this range", ErrBadRange, bookmark, start, end)
		}
		from = bookmark
	}
	if err := s.lock(); err != nil {
		return contract.Page{}, err
	}
	defer s.mu.Unlock()

	m := merger{s: s, pageSize: pageSize, own: s.ownKeysLocked(from, end)}
	stopped := false
	err := s.state.Scan(s.ns, from, end, func(key string, v statedb.Value) bool {
		if s.closed.Load() {
			stopped = true
			return false
		}
		return m.committed(key, v)
	})
	if err != nil {
		return contract.Page{}, s.failedLocked(err, "scanning [%q, %q)", from, end)
	}
	if stopped {
		return contract.Page{}, s.over()
	}
	m.rest()

	rr := &api.RangeRead{StartKey: from, EndKey: end, Exhausted: !m.more, Reads: m.reads}
	if m.more {
		last := ""
		if n := len(m.reads); n > 0 {
			last = m.reads[n-1].Key
		}
		if last != m.next {
			// The bookmark is one of our own uncommitted writes: bound the
			// read exactly, at it, and let the validator scan all of it.
			rr.Exhausted, rr.EndKey = true, m.next
		}
	}
	s.mu.ranges = append(s.mu.ranges, rr)
	return contract.Page{KVs: m.page, Bookmark: m.next}, nil
}

// ownKeysLocked returns the keys the call has written in [from, end),
// sorted.
func (s *stub) ownKeysLocked(from, end string) []string {
	var keys []string
	for k := range s.mu.writes {
		if k >= from && (end == "" || k < end) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// merger merges a committed scan with the call's own writes, in key order,
// into one page. It stops at the first live key past a full page, which it
// keeps as next.
type merger struct {
	s        *stub
	pageSize int
	own      []string // own written keys in range, sorted
	j        int      // next own key to merge
	page     []contract.KV
	reads    []*api.KVRead
	next     string // the bookmark: the first key past the page
	more     bool   // next is set
}

// committed merges one committed key; it returns false to stop the scan.
func (m *merger) committed(key string, v statedb.Value) bool {
	for m.j < len(m.own) && m.own[m.j] < key {
		if !m.ownKey() {
			return false
		}
	}
	m.reads = append(m.reads, &api.KVRead{Key: key, Version: &api.Version{Block: v.Version.Block, Tx: v.Version.Tx}})
	if m.j < len(m.own) && m.own[m.j] == key {
		return m.ownKey() // our write shadows the committed value
	}
	data := v.Data
	if data == nil {
		data = []byte{}
	}
	return m.emit(key, data)
}

// ownKey merges the next own write; it returns false when the page is full.
func (m *merger) ownKey() bool {
	k := m.own[m.j]
	m.j++
	w := m.s.mu.writes[k]
	if w.del {
		return true
	}
	return m.emit(k, w.get())
}

// rest merges the own writes after the last committed key.
func (m *merger) rest() {
	for !m.more && m.j < len(m.own) {
		m.ownKey()
	}
}

func (m *merger) emit(key string, value []byte) bool {
	if m.pageSize > 0 && len(m.page) == m.pageSize {
		m.next, m.more = key, true
		return false
	}
	m.page = append(m.page, contract.KV{Key: key, Value: value})
	return true
}
