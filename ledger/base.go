package ledger

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/strand-ledger/strand/api"
)

// A store created from a snapshot starts at a base: blocks below
// Base.Height were committed by another peer and are absent here. The
// base file, dir/base, is written once by CreateBase (to a temporary
// name, fsynced, renamed, directory fsynced) before the store is first
// opened, and never changes. It is part of the store's truth, beside the
// segments: the index is rebuilt from both. Integers little endian:
//
//	"strand-base\n" | u32 version (1) | u64 height | 32-byte previous hash
//	| u32 genesis length | genesis bytes | u64 tx count | u32 CRC-32C of all the above
//	| tx count records: uvarint id length, id, uvarint block, uvarint tx, one byte code
//	| u32 CRC-32C of the records
//
// Open reads and checks only the head (the first CRC); a rebuild of the
// index reads the records and checks the second.

// BaseFile is the name of the base file in a block store's directory.
const BaseFile = "base"

const (
	baseMagic   = "strand-base\n"
	baseVersion = 1
	// maxGenesis bounds the genesis block a base file may hold.
	maxGenesis = 64 << 20
	// maxTxIDLen bounds a tx id in a base file.
	maxTxIDLen = 1 << 16
)

// ErrBeforeBase: the block asked for lies below the base of a store that
// was created from a snapshot.
var ErrBeforeBase = errors.New("ledger: block before the snapshot base")

// Base is where a store created from a snapshot starts. The zero Base is
// a store that starts at the genesis block.
type Base struct {
	// Height is the number of the first block the store holds; blocks
	// below it are absent.
	Height uint64
	// PrevHash is the header hash of block Height-1, which block Height
	// must name as its previous hash.
	PrevHash []byte
	// Genesis is the encoded block 0 (the channel's configuration), kept
	// so that a peer can check which channel the store belongs to.
	Genesis []byte
}

// TxRecord is a transaction id committed below the base, with where and
// with what code.
type TxRecord struct {
	ID string
	Location
}

// Base returns the store's base; the zero Base if it starts at block 0.
func (s *BlockStore) Base() Base {
	return Base{Height: s.base.Height, PrevHash: bytes.Clone(s.base.PrevHash), Genesis: bytes.Clone(s.base.Genesis)}
}

// baseReader reads a base file: the head at open, the records on demand.
type baseReader struct {
	path  string
	f     *os.File
	r     *bufio.Reader
	crc   hash.Hash32
	base  Base
	count uint64
}

// readBase returns the base of the store in dir, the zero Base if it has
// no base file.
func readBase(dir string) (Base, error) {
	br, err := openBase(dir)
	if err != nil || br == nil {
		return Base{}, err
	}
	defer br.f.Close()
	return br.base, nil
}

// openBase opens and checks the head of dir's base file; nil if none.
func openBase(dir string) (*baseReader, error) {
	path := filepath.Join(dir, BaseFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: open base file: %w", err)
	}
	br := &baseReader{path: path, f: f, r: bufio.NewReaderSize(f, 1<<20), crc: crc32.New(castagnoli)}
	if err := br.readHead(); err != nil {
		f.Close()
		return nil, err
	}
	return br, nil
}

func (br *baseReader) corrupt(format string, a ...any) error {
	return fmt.Errorf("%w: base file %s: %s", ErrCorrupt, br.path, fmt.Sprintf(format, a...))
}

// read reads exactly len(p) bytes into p, adding them to the CRC.
func (br *baseReader) read(p []byte, what string) error {
	if _, err := io.ReadFull(br.r, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return br.corrupt("ends inside the %s", what)
		}
		return fmt.Errorf("ledger: read base file %s: %w", br.path, err)
	}
	br.crc.Write(p)
	return nil
}

func (br *baseReader) readHead() error {
	fixed := make([]byte, len(baseMagic)+4+8+api.HashSize+4)
	if err := br.read(fixed, "header"); err != nil {
		return err
	}
	if string(fixed[:len(baseMagic)]) != baseMagic {
		return br.corrupt("does not start with %q: not a base file", baseMagic)
	}
	p := fixed[len(baseMagic):]
	if v := binary.LittleEndian.Uint32(p); v != baseVersion {
		return br.corrupt("format version %d, this binary reads version %d", v, baseVersion)
	}
	br.base.Height = binary.LittleEndian.Uint64(p[4:])
	br.base.PrevHash = bytes.Clone(p[12 : 12+api.HashSize])
	glen := binary.LittleEndian.Uint32(p[12+api.HashSize:])
	fi, err := br.f.Stat()
	if err != nil {
		return fmt.Errorf("ledger: read base file %s: %w", br.path, err)
	}
	if glen > maxGenesis || int64(glen) > fi.Size()-int64(len(fixed)) {
		return br.corrupt("genesis length %d: more than the file holds or the limit %d", glen, maxGenesis)
	}
	br.base.Genesis = make([]byte, glen)
	var count [8]byte
	if err := br.read(br.base.Genesis, "genesis block"); err != nil {
		return err
	}
	if err := br.read(count[:], "tx count"); err != nil {
		return err
	}
	br.count = binary.LittleEndian.Uint64(count[:])
	if err := br.checkCRC("header"); err != nil {
		return err
	}
	if br.base.Height == 0 {
		return br.corrupt("base height 0")
	}
	return nil
}

// checkCRC reads a stored CRC and compares it with the bytes read since
// the last check.
func (br *baseReader) checkCRC(what string) error {
	want := br.crc.Sum32()
	var stored [4]byte
	if _, err := io.ReadFull(br.r, stored[:]); err != nil {
		return br.corrupt("ends before the checksum of the %s", what)
	}
	if got := binary.LittleEndian.Uint32(stored[:]); got != want {
		return br.corrupt("checksum mismatch in the %s: stored %08x, computed %08x", what, got, want)
	}
	br.crc.Reset()
	return nil
}

// eachTx reads the records after the head, calling fn for each, then
// checks their CRC and that the file ends there. fn sees records before
// the CRC is checked; a caller that must not act on a corrupt file
// buffers them.
func (br *baseReader) eachTx(fn func(TxRecord) error) error {
	var buf []byte
	for i := uint64(0); i < br.count; i++ {
		idLen, err := br.uvarint("tx id length")
		if err != nil {
			return err
		}
		if idLen == 0 || idLen > maxTxIDLen {
			return br.corrupt("tx record %d: id length %d, want 1 to %d", i, idLen, maxTxIDLen)
		}
		buf = append(buf[:0], make([]byte, idLen)...)
		if err := br.read(buf, "tx id"); err != nil {
			return err
		}
		blk, err := br.uvarint("tx block")
		if err != nil {
			return err
		}
		tx, err := br.uvarint("tx position")
		if err != nil {
			return err
		}
		var code [1]byte
		if err := br.read(code[:], "tx code"); err != nil {
			return err
		}
		if blk >= br.base.Height || tx > uint64(^uint32(0)) || !api.TxIDCounts(api.TxValidationCode(code[0])) {
			return br.corrupt("tx record %d (%q): block %d, position %d, code %d out of range", i, buf, blk, tx, code[0])
		}
		if err := fn(TxRecord{ID: string(buf), Location: Location{Block: blk, Tx: uint32(tx), Code: api.TxValidationCode(code[0])}}); err != nil {
			return err
		}
	}
	if err := br.checkCRC("tx records"); err != nil {
		return err
	}
	if _, err := br.r.ReadByte(); err != io.EOF {
		return br.corrupt("bytes after the tx records")
	}
	return nil
}

func (br *baseReader) uvarint(what string) (uint64, error) {
	var p [binary.MaxVarintLen64]byte
	for i := range p {
		b, err := br.r.ReadByte()
		if err != nil {
			return 0, br.corrupt("ends inside a %s", what)
		}
		br.crc.Write([]byte{b})
		p[i] = b
		if b < 0x80 {
			v, n := binary.Uvarint(p[:i+1])
			if n <= 0 || n != len(binary.AppendUvarint(nil, v)) { // one encoding per value
				return 0, br.corrupt("malformed %s", what)
			}
			return v, nil
		}
	}
	return 0, br.corrupt("malformed %s", what)
}

// EachTx calls fn for every indexed transaction id committed below
// height, in id order, from one point-in-time view of the index. height
// must be at most Height(). It is how a snapshot collects the ids that
// duplicate detection needs.
func (s *BlockStore) EachTx(height uint64, fn func(TxRecord) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mu.closed {
		return fmt.Errorf("ledger: list tx ids: %w", ErrClosed)
	}
	if h := s.state.Load().height; height > h {
		return fmt.Errorf("ledger: list tx ids below height %d: the store's height is %d", height, h)
	}
	return s.idx.eachTx(func(t TxRecord) error {
		if t.Block >= height {
			return nil
		}
		return fn(t)
	})
}
