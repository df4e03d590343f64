package ledger

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/strand-ledger/strand/api"
)

// BaseWriter writes the base file of a new block store, streaming its tx
// ids: NewBaseWriter, Add each id, then Commit (or Abort). Until Commit
// the file has a temporary name, so dir holds no base and no store.
type BaseWriter struct {
	dir, path, tmp string
	base           Base
	count, added   uint64
	f              *os.File
	w              *bufio.Writer
	crc            hash.Hash32
	rec            []byte
	err            error
}

// NewBaseWriter starts the base file of a block store in dir that starts
// at base and lists count tx ids (every id committed below the base that
// api.TxIDCounts counts, each once). dir must not hold a block store yet.
func NewBaseWriter(dir string, base Base, count uint64) (*BaseWriter, error) {
	switch {
	case base.Height == 0:
		return nil, fmt.Errorf("ledger: base height 0: a store from a snapshot starts after block 0, want at least 1")
	case len(base.PrevHash) != api.HashSize:
		return nil, fmt.Errorf("ledger: base previous hash is %d bytes, want %d", len(base.PrevHash), api.HashSize)
	case len(base.Genesis) > maxGenesis:
		return nil, fmt.Errorf("ledger: base genesis block is %d bytes, at most %d allowed", len(base.Genesis), maxGenesis)
	}
	if err := checkFresh(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ledger: create %s: %w", dir, err)
	}
	bw := &BaseWriter{dir: dir, path: filepath.Join(dir, BaseFile), base: base, count: count, crc: crc32.New(castagnoli)}
	bw.tmp = bw.path + ".tmp"
	f, err := os.OpenFile(bw.tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ledger: create base file: %w", err)
	}
	bw.f, bw.w = f, bufio.NewWriterSize(f, 1<<20)
	head := append([]byte(baseMagic), make([]byte, 0, 64)...)
	head = binary.LittleEndian.AppendUint32(head, baseVersion)
	head = binary.LittleEndian.AppendUint64(head, base.Height)
	head = append(head, base.PrevHash...)
	head = binary.LittleEndian.AppendUint32(head, uint32(len(base.Genesis)))
	bw.write(head, true)
	bw.write(base.Genesis, true)
	bw.write(binary.LittleEndian.AppendUint64(nil, count), true)
	bw.write(binary.LittleEndian.AppendUint32(nil, bw.crc.Sum32()), false)
	bw.crc.Reset()
	if bw.err != nil {
		bw.Abort()
		return nil, fmt.Errorf("ledger: write base file %s: %w", bw.tmp, bw.err)
	}
	return bw, nil
}

func (bw *BaseWriter) write(p []byte, summed bool) {
	if bw.err != nil {
		return
	}
	if summed {
		bw.crc.Write(p)
	}
	_, bw.err = bw.w.Write(p)
}

// Add appends a tx id committed below the base.
func (bw *BaseWriter) Add(t TxRecord) error {
	if bw.err != nil {
		return bw.err
	}
	switch {
	case bw.added == bw.count:
		bw.err = fmt.Errorf("ledger: base tx %q is one more than the %d announced", t.ID, bw.count)
	case t.ID == "" || len(t.ID) > maxTxIDLen:
		bw.err = fmt.Errorf("ledger: base tx id %.40q: want 1 to %d bytes", t.ID, maxTxIDLen)
	case t.Block >= bw.base.Height:
		bw.err = fmt.Errorf("ledger: base tx %q is in block %d, not below the base height %d", t.ID, t.Block, bw.base.Height)
	case !api.TxIDCounts(t.Code):
		bw.err = fmt.Errorf("ledger: base tx %q has code %v, which does not claim its id", t.ID, t.Code)
	}
	if bw.err != nil {
		return bw.err
	}
	bw.rec = binary.AppendUvarint(bw.rec[:0], uint64(len(t.ID)))
	bw.rec = append(bw.rec, t.ID...)
	bw.rec = binary.AppendUvarint(bw.rec, t.Block)
	bw.rec = binary.AppendUvarint(bw.rec, uint64(t.Tx))
	bw.rec = append(bw.rec, byte(t.Code))
	bw.write(bw.rec, true)
	bw.added++
	return bw.err
}

// Commit checks that every announced id was added, writes the checksum,
// fsyncs the file and gives it its name: dir is then a block store that
// starts at the base. On error it aborts.
func (bw *BaseWriter) Commit() error {
	if bw.err == nil && bw.added != bw.count {
		bw.err = fmt.Errorf("ledger: base file got %d tx ids, %d were announced", bw.added, bw.count)
	}
	bw.write(binary.LittleEndian.AppendUint32(nil, bw.crc.Sum32()), false)
	if bw.err == nil {
		bw.err = bw.w.Flush()
	}
	if bw.err == nil {
		bw.err = bw.f.Sync()
	}
	if cerr := bw.f.Close(); bw.err == nil {
		bw.err = cerr
	}
	bw.f = nil
	if bw.err == nil {
		bw.err = os.Rename(bw.tmp, bw.path)
	}
	if bw.err != nil {
		os.Remove(bw.tmp)
		return fmt.Errorf("ledger: write base file %s: %w", bw.path, bw.err)
	}
	return syncDir(bw.dir)
}

// Abort drops the unfinished file.
func (bw *BaseWriter) Abort() {
	if bw.f != nil {
		bw.f.Close()
		bw.f = nil
	}
	os.Remove(bw.tmp)
	if bw.err == nil {
		bw.err = errors.New("ledger: base file aborted")
	}
}

// CreateBase makes dir a block store that starts at base, with txs the
// transaction ids committed below it (see NewBaseWriter). Open the store
// afterwards with OpenBlockStore.
func CreateBase(dir string, base Base, txs []TxRecord) error {
	bw, err := NewBaseWriter(dir, base, uint64(len(txs)))
	if err != nil {
		return err
	}
	for _, t := range txs {
		if err := bw.Add(t); err != nil {
			bw.Abort()
			return err
		}
	}
	return bw.Commit()
}

// checkFresh refuses a dir that already holds a block store.
func checkFresh(dir string) error {
	for _, name := range []string{BaseFile, "index", "blocks"} {
		p := filepath.Join(dir, name)
		_, err := os.Stat(p)
		if err == nil {
			return fmt.Errorf("ledger: %s already holds a block store (%s exists); a store from a snapshot needs an empty directory", dir, p)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("ledger: %w", err)
		}
	}
	return nil
}
