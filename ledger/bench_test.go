package ledger

import (
	"fmt"
	"testing"

	"github.com/strand-ledger/strand/api"
)

// benchEntries returns n chained entries of one transaction each. They
// share one raw block: Append does not decode Raw.
func benchEntries(n int) []Entry {
	var c chain
	template := c.block(1, nil, nil)
	es := make([]Entry, n)
	prev := []byte(nil)
	for i := range es {
		h := &api.BlockHeader{Number: uint64(i), PreviousHash: prev, DataHash: make([]byte, 32)}
		es[i] = Entry{
			Number:     uint64(i),
			HeaderHash: api.HeaderHash(h),
			PrevHash:   prev,
			Raw:        template.Raw,
			TxIDs:      []string{fmt.Sprintf("bench-tx-%d", i)},
			Codes:      []byte{0},
		}
		prev = es[i].HeaderHash
	}
	return es
}

func benchAppend(b *testing.B, group int, noSync bool) {
	es := benchEntries(b.N * group)
	s := openStore(b, b.TempDir(), Options{NoSync: noSync})
	defer s.Close()
	b.SetBytes(int64(group * (frameHeaderSize + len(es[0].Raw))))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Append(es[i*group : (i+1)*group]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st := s.Stats()
	b.ReportMetric(float64(b.N*group)/b.Elapsed().Seconds(), "blocks/s")
	if st.Fsyncs > 0 {
		b.ReportMetric(float64(st.FsyncTotal.Microseconds())/float64(st.Fsyncs), "µs/fsync")
	}
}

func BenchmarkAppend1(b *testing.B) {
	b.Run("nosync", func(b *testing.B) { benchAppend(b, 1, true) })
	b.Run("sync", func(b *testing.B) { benchAppend(b, 1, false) })
}

func BenchmarkAppend100Group(b *testing.B) {
	b.Run("nosync", func(b *testing.B) { benchAppend(b, 100, true) })
	b.Run("sync", func(b *testing.B) { benchAppend(b, 100, false) })
}

func BenchmarkRawBlock(b *testing.B) {
	es := benchEntries(10000)
	s := openStore(b, b.TempDir(), Options{NoSync: true})
	defer s.Close()
	mustAppend(b, s, es)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.RawBlock(uint64(i % len(es))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIterate(b *testing.B) {
	es := benchEntries(10000)
	s := openStore(b, b.TempDir(), Options{NoSync: true})
	defer s.Close()
	mustAppend(b, s, es)
	b.ReportAllocs()
	b.ResetTimer()
	it := s.Iterator(0)
	for i := 0; i < b.N; i++ {
		if _, _, err := it.Next(); err != nil {
			it = s.Iterator(0)
		}
	}
}

// BenchmarkTxLocationMiss looks up tx ids that are not in a store of
// 300,000 transactions: the duplicate check every new transaction makes.
func BenchmarkTxLocationMiss(b *testing.B) {
	es := benchEntries(3000)
	for i := range es {
		ids := make([]string, 100)
		for j := range ids {
			ids[j] = fmt.Sprintf("%064x", i*100+j)
		}
		es[i].TxIDs, es[i].Codes = ids, make([]byte, len(ids))
	}
	s := openStore(b, b.TempDir(), Options{NoSync: true})
	defer s.Close()
	for i := 0; i < len(es); i += 100 {
		if err := s.Append(es[i : i+100]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok, err := s.TxLocation(fmt.Sprintf("%064x", 1<<40+i)); ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// BenchmarkOpen reopens a closed store of 4,000 chained blocks (about 15
// MB) with its index intact, with and without the scrub, which reads
// every indexed frame back (the cost a damaged block behind an intact
// index needs to be found at start).
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	s := openStore(b, dir, Options{NoSync: true})
	var c chain
	for i := 0; i < 40; i++ {
		mustAppend(b, s, c.blocks(100, 200))
	}
	bytes := s.Stats().Bytes
	s.Close()
	for _, skip := range []bool{false, true} {
		b.Run(fmt.Sprintf("scrub=%v", !skip), func(b *testing.B) {
			b.SetBytes(bytes)
			for i := 0; i < b.N; i++ {
				s := openStore(b, dir, Options{NoSync: true, SkipScrub: skip})
				s.Close()
			}
		})
	}
}
