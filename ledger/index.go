package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/internal/compactsched"
)

// Index keys. One byte names the kind of record:
//
//	'b' + u64 block number (big endian) → uvarint segment, offset, frame size
//	't' + tx id                         → uvarint block, tx index; one byte code
//	'm' "last"                          → u64 block, u32 segment, u64 end offset (little endian)
//	'm' "base"                          → u64 base height: the base file's tx ids are indexed
const (
	prefixBlock = 'b'
	prefixTx    = 't'
)

var (
	metaLastKey = []byte("mlast")
	metaBaseKey = []byte("mbase") // u64 base height (little endian): the base file's tx ids are indexed
)

// blockLoc is where a block's frame is.
type blockLoc struct {
	seg  int
	off  int64
	size int64
}

// indexMeta is the last indexed block and the end of its frame.
type indexMeta struct {
	block uint64
	seg   int
	end   int64
}

// index is the Pebble database that maps block numbers and tx ids to
// where they are stored. Its writes are never synced.
type index struct {
	db *pebble.DB
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Errorf(string, ...any)          {}
func (quietLogger) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

func openIndex(dir string) (*index, error) {
	// Bloom filters: most tx-id lookups are for ids that do not exist (the
	// committer's duplicate check), which a filter answers without reading
	// data blocks.
	opts := &pebble.Options{Logger: quietLogger{}}
	opts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	opts.EnsureDefaults()
	opts.Experimental.CompactionScheduler = compactsched.New() // no timer while idle
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("ledger: open index: %w", err)
	}
	return &index{db: db}, nil
}

func (x *index) close() error {
	if err := x.db.Close(); err != nil {
		return fmt.Errorf("ledger: close index: %w", err)
	}
	return nil
}

// get calls fn with the value of key while it is valid.
func (x *index) get(key []byte, fn func(v []byte) error) (bool, error) {
	v, closer, err := x.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ledger: index read: %w", err)
	}
	err = fn(v)
	closer.Close()
	return true, err
}

func (x *index) blockLocation(n uint64) (blockLoc, bool, error) {
	var key [9]byte
	var loc blockLoc
	ok, err := x.get(blockKey(key[:0], n), func(v []byte) error {
		var ok bool
		loc, ok = decodeBlockLoc(v)
		if !ok {
			return fmt.Errorf("%w: index entry of block %d is malformed (%x)", ErrCorrupt, n, v)
		}
		return nil
	})
	return loc, ok, err
}

func (x *index) txLocation(id string) (Location, bool, error) {
	key := make([]byte, 0, 1+len(id))
	key = append(append(key, prefixTx), id...)
	var loc Location
	ok, err := x.get(key, func(v []byte) (err error) {
		loc, err = decodeTxLoc(id, v)
		return err
	})
	return loc, ok, err
}

func decodeTxLoc(id string, v []byte) (Location, error) {
	b, n1 := binary.Uvarint(v)
	var tx uint64
	n2 := 0
	if n1 > 0 {
		tx, n2 = binary.Uvarint(v[n1:])
	}
	if n1 <= 0 || n2 <= 0 || len(v) != n1+n2+1 || tx > uint64(^uint32(0)) {
		return Location{}, fmt.Errorf("%w: index entry of tx %q is malformed (%x)", ErrCorrupt, id, v)
	}
	return Location{Block: b, Tx: uint32(tx), Code: api.TxValidationCode(v[n1+n2])}, nil
}

func (x *index) lastIndexed() (indexMeta, bool, error) {
	var m indexMeta
	ok, err := x.get(metaLastKey, func(v []byte) error {
		if len(v) != 20 {
			return fmt.Errorf("%w: last-indexed record is malformed (%x)", ErrCorrupt, v)
		}
		m.block = binary.LittleEndian.Uint64(v[0:8])
		m.seg = int(binary.LittleEndian.Uint32(v[8:12]))
		m.end = int64(binary.LittleEndian.Uint64(v[12:20]))
		return nil
	})
	return m, ok, err
}

// baseIndexed returns the base height whose tx ids the index holds, and
// whether it holds any.
func (x *index) baseIndexed() (uint64, bool, error) {
	var h uint64
	ok, err := x.get(metaBaseKey, func(v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("%w: base record is malformed (%x)", ErrCorrupt, v)
		}
		h = binary.LittleEndian.Uint64(v)
		return nil
	})
	return h, ok, err
}

// clear deletes every record of the index.
func (x *index) clear() error {
	if err := x.db.DeleteRange([]byte{}, []byte{0xff}, pebble.NoSync); err != nil {
		return fmt.Errorf("ledger: clear index: %w", err)
	}
	return nil
}

func blockKey(buf []byte, n uint64) []byte {
	return binary.BigEndian.AppendUint64(append(buf, prefixBlock), n)
}

func decodeBlockLoc(v []byte) (blockLoc, bool) {
	seg, n1 := binary.Uvarint(v)
	if n1 <= 0 {
		return blockLoc{}, false
	}
	off, n2 := binary.Uvarint(v[n1:])
	if n2 <= 0 {
		return blockLoc{}, false
	}
	size, n3 := binary.Uvarint(v[n1+n2:])
	if n3 <= 0 || n1+n2+n3 != len(v) || seg > 1<<31 || off > 1<<62 || size > 1<<40 {
		return blockLoc{}, false
	}
	return blockLoc{seg: int(seg), off: int64(off), size: int64(size)}, true
}

// indexWriter collects the index records of appended blocks into one
// reusable batch, with reusable key and value buffers.
type indexWriter struct {
	db     *pebble.DB
	batch  *pebble.Batch
	key    []byte
	val    []byte
	filter *txFilter // gets every tx id indexed; nil during recovery
}

func newIndexWriter(x *index) *indexWriter {
	return &indexWriter{db: x.db, batch: x.db.NewBatch()}
}

// addBlock records block n's frame and its transactions.
func (w *indexWriter) addBlock(n uint64, loc blockLoc, txIDs []string, codes []byte) error {
	w.key = blockKey(w.key[:0], n)
	w.val = binary.AppendUvarint(w.val[:0], uint64(loc.seg))
	w.val = binary.AppendUvarint(w.val, uint64(loc.off))
	w.val = binary.AppendUvarint(w.val, uint64(loc.size))
	if err := w.batch.Set(w.key, w.val, nil); err != nil {
		return err
	}
	for i, id := range txIDs {
		code := byte(api.TxValidationCode_NOT_VALIDATED)
		if i < len(codes) {
			code = codes[i]
		}
		if id == "" || !api.TxIDCounts(api.TxValidationCode(code)) {
			continue
		}
		if w.filter != nil {
			w.filter.add(id)
		}
		w.key = append(append(w.key[:0], prefixTx), id...)
		w.val = binary.AppendUvarint(w.val[:0], n)
		w.val = binary.AppendUvarint(w.val, uint64(i))
		w.val = append(w.val, code)
		if err := w.batch.Set(w.key, w.val, nil); err != nil {
			return err
		}
	}
	return nil
}

// addTx records a transaction id committed below the base.
func (w *indexWriter) addTx(t TxRecord) error {
	w.key = append(append(w.key[:0], prefixTx), t.ID...)
	w.val = binary.AppendUvarint(w.val[:0], t.Block)
	w.val = binary.AppendUvarint(w.val, uint64(t.Tx))
	w.val = append(w.val, byte(t.Code))
	return w.batch.Set(w.key, w.val, nil)
}

// commitBase commits the batch, unsynced; with done, it also records that
// the ids of the base at height are all indexed.
func (w *indexWriter) commitBase(height uint64, done bool) error {
	var err error
	if done {
		err = w.batch.Set(metaBaseKey, binary.LittleEndian.AppendUint64(nil, height), nil)
	}
	if err == nil {
		err = w.batch.Commit(pebble.NoSync)
	}
	w.batch.Reset()
	if err != nil {
		return fmt.Errorf("ledger: index the base's tx ids: %w", err)
	}
	return nil
}

// commit writes the last-indexed record and commits the batch, unsynced.
func (w *indexWriter) commit(m indexMeta) error {
	var v [20]byte
	binary.LittleEndian.PutUint64(v[0:8], m.block)
	binary.LittleEndian.PutUint32(v[8:12], uint32(m.seg))
	binary.LittleEndian.PutUint64(v[12:20], uint64(m.end))
	err := w.batch.Set(metaLastKey, v[:], nil)
	if err == nil {
		err = w.batch.Commit(pebble.NoSync)
	}
	w.batch.Reset()
	if err != nil {
		return fmt.Errorf("ledger: index blocks up to %d: %w", m.block, err)
	}
	return nil
}

// flush commits the batch, unsynced, leaving the last-indexed record as
// it is: for entries of blocks below it (damaged and replaced ones).
func (w *indexWriter) flush() error {
	err := w.batch.Commit(pebble.NoSync)
	w.batch.Reset()
	if err != nil {
		return fmt.Errorf("ledger: index: %w", err)
	}
	return nil
}

// reset drops what the batch collected.
func (w *indexWriter) reset() { w.batch.Reset() }

func (w *indexWriter) size() int { return w.batch.Len() }

func (w *indexWriter) close() { w.batch.Close() }

// eachTx calls fn for every tx record, in id order, from one view.
func (x *index) eachTx(fn func(TxRecord) error) error {
	it, err := x.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixTx}, UpperBound: []byte{prefixTx + 1}})
	if err != nil {
		return fmt.Errorf("ledger: reading the index's tx ids: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		id := string(it.Key()[1:])
		loc, err := decodeTxLoc(id, it.Value())
		if err == nil {
			err = fn(TxRecord{ID: id, Location: loc})
		}
		if err != nil {
			it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("ledger: reading the index's tx ids: %w", err)
	}
	return nil
}
