package ledger

import (
	"fmt"
	"hash/maphash"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// txFilter is a Bloom filter of every tx id the index holds. Nearly every
// lookup is for a new id (the endorser's replay check, the committer's
// duplicate check, the gateway's commit-status lookup), and a filter
// answers "not there" in a few hundred nanoseconds where the index, a
// Pebble read, took 2 to 12 µs; a "maybe" goes to the index as before.
// Invariants:
//   - An id is added before the Append that indexes it publishes, so a
//     reader that sees a block's height finds its ids in the filter.
//   - False positives only cost a Pebble read; there are no false
//     negatives. Ids of a failed Append stay in it: harmless.
//   - It grows without rebuilding: when the newest part is full, a part
//     twice its size is added; a lookup asks every part (a handful: parts
//     double). Bits are set with atomic OR, so lookups need no lock.
type txFilter struct {
	seed  maphash.Seed
	parts atomic.Pointer[[]*bloomPart]
	count int // ids added to the newest part; appender only
}

// bitsPerID and probes give about 1% false positives per part.
const (
	bitsPerID     = 10
	probes        = 7
	minFilterSize = 1 << 16 // ids of the first part
)

type bloomPart struct {
	bits []atomic.Uint64
	cap  int
}

func newTxFilter(expected int) *txFilter {
	f := &txFilter{seed: maphash.MakeSeed()}
	parts := []*bloomPart{newBloomPart(max(minFilterSize, 2*expected))}
	f.parts.Store(&parts)
	return f
}

func newBloomPart(capacity int) *bloomPart {
	return &bloomPart{bits: make([]atomic.Uint64, (capacity*bitsPerID+63)/64), cap: capacity}
}

func (f *txFilter) hashes(id string) (uint64, uint64) {
	h := maphash.String(f.seed, id)
	return h, h>>33 | h<<31 | 1 // the second hash is odd, so probes cycle through every bit
}

// add records id. Appender only (BlockStore.appendMu, or before the store
// is shared).
func (f *txFilter) add(id string) {
	parts := *f.parts.Load()
	last := parts[len(parts)-1]
	if f.count >= last.cap {
		last = newBloomPart(2 * last.cap)
		grown := append(append(make([]*bloomPart, 0, len(parts)+1), parts...), last)
		f.parts.Store(&grown)
		f.count = 0
	}
	f.count++
	h1, h2 := f.hashes(id)
	n := uint64(len(last.bits)) * 64
	for i := range uint64(probes) {
		b := (h1 + i*h2) % n
		last.bits[b/64].Or(1 << (b % 64))
	}
}

// mayHave reports whether id may have been added; false is certain.
func (f *txFilter) mayHave(id string) bool {
	h1, h2 := f.hashes(id)
	for _, p := range *f.parts.Load() {
		n := uint64(len(p.bits)) * 64
		all := true
		for i := range uint64(probes) {
			b := (h1 + i*h2) % n
			if p.bits[b/64].Load()&(1<<(b%64)) == 0 {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// loadTxFilter builds the filter from the index's tx records.
func loadTxFilter(x *index) (*txFilter, error) {
	it, err := x.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixTx}, UpperBound: []byte{prefixTx + 1}})
	if err != nil {
		return nil, fmt.Errorf("ledger: reading the index's tx ids: %w", err)
	}
	var ids []string
	for ok := it.First(); ok; ok = it.Next() {
		ids = append(ids, string(it.Key()[1:]))
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("ledger: reading the index's tx ids: %w", err)
	}
	f := newTxFilter(len(ids))
	for _, id := range ids {
		f.add(id)
	}
	return f, nil
}
