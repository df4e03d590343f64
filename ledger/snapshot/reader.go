package snapshot

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// Verify checks the snapshot file at path whole: version, checksum and
// every record. It returns what the file holds.
func Verify(path string) (Info, error) { return Read(path, Visitor{}) }

// Read checks the snapshot file at path (version and checksum) and then
// decodes it, handing its records to v in file order. An error after the
// checksum check means the file breaks the format's rules; v may have
// seen records by then.
func Read(path string, v Visitor) (Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: %w", err)
	}
	return ReadFrom(f, fi.Size(), path, v)
}

// ReadFrom is Read on size bytes of r; name labels errors.
func ReadFrom(r io.ReaderAt, size int64, name string, v Visitor) (Info, error) {
	d := &decoder{name: name}
	if size < int64(headSize+sumSize) {
		return Info{}, d.corrupt("%d bytes, too short to be a snapshot (at least %d)", size, headSize+sumSize)
	}
	head := make([]byte, headSize)
	if _, err := r.ReadAt(head, 0); err != nil {
		return Info{}, fmt.Errorf("snapshot: read %s: %w", name, err)
	}
	if string(head[:len(magic)]) != magic {
		return Info{}, d.corrupt("does not start with %q: not a strand snapshot", magic)
	}
	if ver := binary.LittleEndian.Uint32(head[len(magic):]); ver != Version {
		return Info{}, fmt.Errorf("%w: %s is format version %d; this binary reads version %d (use a strand binary that writes version %d)",
			ErrVersion, name, ver, Version, ver)
	}
	sum, err := checksum(r, size, name)
	if err != nil {
		return Info{}, err
	}
	body := io.NewSectionReader(r, int64(headSize), size-int64(headSize+sumSize))
	d.r, d.left, d.off = bufio.NewReaderSize(body, 1<<20), body.Size(), int64(headSize)
	info, err := d.decode(v)
	if err != nil {
		return Info{}, err
	}
	info.Size, info.SHA256 = size, sum
	return info, nil
}

// checksum compares the SHA-256 of all but the last 32 bytes with them.
func checksum(r io.ReaderAt, size int64, name string) ([]byte, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, size-sumSize)); err != nil {
		return nil, fmt.Errorf("snapshot: read %s: %w", name, err)
	}
	stored := make([]byte, sumSize)
	if _, err := r.ReadAt(stored, size-sumSize); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("snapshot: read %s: %w", name, err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, stored) {
		return nil, fmt.Errorf("%w: %s: checksum mismatch: stored %x, contents hash to %x (the file is damaged or truncated)",
			ErrCorrupt, name, stored, got)
	}
	return stored, nil
}

// decoder reads the records between the version and the checksum.
type decoder struct {
	name string
	r    *bufio.Reader
	left int64 // bytes of records not yet read
	off  int64 // file offset of the next byte
	rec  int64 // file offset of the record being decoded
	buf  []byte
}

func (d *decoder) corrupt(format string, a ...any) error {
	where := ""
	if d.rec > 0 {
		where = fmt.Sprintf(" record at offset %d:", d.rec)
	}
	return fmt.Errorf("%w: %s:%s %s", ErrCorrupt, d.name, where, fmt.Sprintf(format, a...))
}

// next reads the next record.
func (d *decoder) next() (tag byte, payload []byte, err error) {
	d.rec = d.off
	if d.left == 0 {
		return 0, nil, d.corrupt("the records end before the end record")
	}
	tag, err = d.r.ReadByte()
	if err != nil {
		return 0, nil, fmt.Errorf("snapshot: read %s: %w", d.name, err)
	}
	var lenBuf [binary.MaxVarintLen64]byte
	k := 0
	for k < len(lenBuf) && int64(k) < d.left-1 {
		b, err := d.r.ReadByte()
		if err != nil {
			return 0, nil, fmt.Errorf("snapshot: read %s: %w", d.name, err)
		}
		lenBuf[k] = b
		k++
		if b < 0x80 {
			break
		}
	}
	n, m := binary.Uvarint(lenBuf[:k])
	if m <= 0 || m != uvarintLen(n) {
		return 0, nil, d.corrupt("malformed record length")
	}
	used := int64(1 + m)
	if n > maxRecord || int64(n) > d.left-used {
		return 0, nil, d.corrupt("record length %d: more than the %d bytes left or the limit %d", n, d.left-used, maxRecord)
	}
	if cap(d.buf) < int(n) {
		d.buf = make([]byte, n)
	}
	payload = d.buf[:n]
	if _, err := io.ReadFull(d.r, payload); err != nil {
		return 0, nil, fmt.Errorf("snapshot: read %s: %w", d.name, err)
	}
	d.left -= used + int64(n)
	d.off += used + int64(n)
	return tag, payload, nil
}

func uvarintLen(n uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], n)
}

// cursor parses one record's payload; the first failure sticks.
type cursor struct {
	b  []byte
	ok bool
}

func (c *cursor) uvarint() uint64 {
	v, n := binary.Uvarint(c.b)
	if n <= 0 || n != uvarintLen(v) { // one encoding per value: a file has one form
		c.ok, c.b = false, nil
		return 0
	}
	c.b = c.b[n:]
	return v
}

func (c *cursor) bytes(limit int) []byte {
	n := c.uvarint()
	if !c.ok || n > uint64(len(c.b)) || n > uint64(limit) {
		c.ok, c.b = false, nil
		return nil
	}
	out := c.b[:n]
	c.b = c.b[n:]
	return out
}

func (c *cursor) fixed(n int) []byte {
	if !c.ok || len(c.b) < n {
		c.ok, c.b = false, nil
		return nil
	}
	out := c.b[:n]
	c.b = c.b[n:]
	return out
}

func (d *decoder) decode(v Visitor) (Info, error) {
	var info Info
	tag, p, err := d.next()
	if err != nil {
		return info, err
	}
	if tag != tagHeader {
		return info, d.corrupt("first record has tag %q, want the header %q", tag, tagHeader)
	}
	c := cursor{b: p, ok: true}
	info.Channel = string(c.bytes(maxChannel))
	info.Genesis = bytes.Clone(c.bytes(maxRecord))
	if !c.ok || len(c.b) != 0 || info.Channel == "" || len(info.Genesis) == 0 {
		return info, d.corrupt("malformed header record")
	}
	var lastKey []byte
	var lastID string
	var maxBlock uint64
	phase := byte(tagState)
	for {
		tag, p, err := d.next()
		if err != nil {
			return info, err
		}
		switch {
		case tag == tagState && phase == tagState:
			ns, key, val, err := d.state(p, lastKey)
			if err != nil {
				return info, err
			}
			lastKey = statedb.AppendKey(lastKey[:0], ns, key)
			maxBlock = max(maxBlock, val.Version.Block+1)
			info.States++
			if v.State != nil {
				if err := v.State(ns, key, val); err != nil {
					return info, err
				}
			}
		case tag == tagTx && phase != tagEnd:
			phase = tagTx
			t, err := d.tx(p, lastID, info.TxIDs > 0)
			if err != nil {
				return info, err
			}
			lastID = t.ID
			maxBlock = max(maxBlock, t.Block+1)
			info.TxIDs++
			if v.Tx != nil {
				if err := v.Tx(t); err != nil {
					return info, err
				}
			}
		case tag == tagEnd:
			if err := d.end(p, &info, maxBlock); err != nil {
				return info, err
			}
			if d.left != 0 {
				return info, d.corrupt("%d bytes after the end record", d.left)
			}
			return info, nil
		default:
			return info, d.corrupt("record tag %q out of place (want state records, then tx records, then the end record)", tag)
		}
	}
}

func (d *decoder) state(p, lastKey []byte) (ns, key string, v statedb.Value, err error) {
	c := cursor{b: p, ok: true}
	nsb := c.bytes(statedb.MaxNamespaceLen)
	keyb := c.bytes(maxRecord)
	v.Version.Block = c.uvarint()
	tx := c.uvarint()
	if !c.ok || tx > uint64(^uint32(0)) {
		return "", "", v, d.corrupt("malformed state record")
	}
	ns, key = string(nsb), string(keyb)
	if err := statedb.CheckNamespace(ns); err != nil {
		return "", "", v, d.corrupt("state key %q: %v", key, err)
	}
	if lastKey != nil && bytes.Compare(statedb.AppendKey(nil, ns, key), lastKey) <= 0 {
		return "", "", v, d.corrupt("state key %q of %q is not after the previous key (keys must ascend)", key, ns)
	}
	v.Version.Tx = uint32(tx)
	v.Data = bytes.Clone(c.b)
	if v.Data == nil {
		v.Data = []byte{}
	}
	return ns, key, v, nil
}

func (d *decoder) tx(p []byte, lastID string, haveLast bool) (ledger.TxRecord, error) {
	c := cursor{b: p, ok: true}
	var t ledger.TxRecord
	t.Block = c.uvarint()
	tx := c.uvarint()
	code := c.fixed(1)
	if !c.ok || tx > uint64(^uint32(0)) {
		return t, d.corrupt("malformed tx record")
	}
	t.Tx, t.Code, t.ID = uint32(tx), api.TxValidationCode(code[0]), string(c.b)
	switch {
	case t.ID == "" || len(t.ID) > maxTxID:
		return t, d.corrupt("tx id of %d bytes, want 1 to %d", len(t.ID), maxTxID)
	case haveLast && t.ID <= lastID:
		return t, d.corrupt("tx id %q is not after the previous id %q (ids must ascend)", t.ID, lastID)
	case !api.TxIDCounts(t.Code):
		return t, d.corrupt("tx %q has code %v, which does not claim its id", t.ID, t.Code)
	}
	return t, nil
}

func (d *decoder) end(p []byte, info *Info, maxBlock uint64) error {
	c := cursor{b: p, ok: true}
	info.Height = c.uvarint()
	info.PrevHash = bytes.Clone(c.fixed(api.HashSize))
	states, txs := c.uvarint(), c.uvarint()
	switch {
	case !c.ok || len(c.b) != 0:
		return d.corrupt("malformed end record")
	case info.Height == 0:
		return d.corrupt("height 0")
	case maxBlock > info.Height:
		return d.corrupt("a version or tx id names block %d, not below the height %d", maxBlock-1, info.Height)
	case states != info.States || txs != info.TxIDs:
		return d.corrupt("the end record counts %d keys and %d tx ids, the file holds %d and %d", states, txs, info.States, info.TxIDs)
	}
	return nil
}
