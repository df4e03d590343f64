package memdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/google/btree"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// A checkpoint file holds one published version of the tree:
//
//	magic       8 bytes  "STRNDCKP"
//	backend     uvarint length, then the backend name (Format.Backend)
//	format      uvarint (Format.Version)
//	savepoint   8 bytes BE
//	count       8 bytes BE: the number of entries
//	entries     count times, in ascending key order:
//	              uvarint key length, key (statedb.AppendKey form),
//	              block 8 bytes BE, tx 4 bytes BE,
//	              uvarint data length, data
//	crc         4 bytes BE: CRC-32C of every byte before it
//
// It is written to a temporary file in the directory, synced, renamed to
// its final name checkpoint-<savepoint, 20 digits>.ckpt and the directory
// synced, so a checkpoint file under its final name is always complete;
// a crash leaves at worst a *.tmp file, which Open deletes.

// Format is the layout of a checkpoint directory and of its files.
var Format = statedb.Format{Backend: "memory-checkpoint", Version: 1}

const (
	ckptMagic  = "STRNDCKP"
	ckptPrefix = "checkpoint-"
	ckptSuffix = ".ckpt"
	tmpSuffix  = ".tmp"
	// ckptKeep is how many checkpoint files stay after a new one is
	// written: the newest, and the one before it for an operator to fall
	// back to should the newest be damaged on disk.
	ckptKeep = 2
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func ckptName(savepoint uint64) string {
	return fmt.Sprintf("%s%020d%s", ckptPrefix, savepoint, ckptSuffix)
}

// parseCkptName returns the savepoint a checkpoint file name carries.
func parseCkptName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, ckptPrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ckptSuffix)
	if !ok || len(s) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// crcWriter passes writes on to w and hashes them.
type crcWriter struct {
	w   io.Writer
	sum uint32
}

func (c *crcWriter) Write(p []byte) (int, error) {
	c.sum = crc32.Update(c.sum, crcTable, p)
	return c.w.Write(p)
}

// writeCheckpoint writes v to dir atomically and returns the file's size.
// v must be a published version: it is read, never written, and may be
// read by others meanwhile.
func writeCheckpoint(dir string, v *version) (int64, error) {
	tmp, err := os.CreateTemp(dir, ckptPrefix+"*"+tmpSuffix)
	if err != nil {
		return 0, fmt.Errorf("memdb: checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	size, err := encodeCheckpoint(tmp, v)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, ckptName(v.savepoint)))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return 0, fmt.Errorf("memdb: checkpoint at savepoint %d: %w", v.savepoint, err)
	}
	return size, nil
}

func encodeCheckpoint(f io.Writer, v *version) (int64, error) {
	cw := &crcWriter{w: f}
	bw := bufio.NewWriterSize(cw, 1<<20)
	var scratch []byte
	scratch = append(scratch, ckptMagic...)
	scratch = binary.AppendUvarint(scratch, uint64(len(Format.Backend)))
	scratch = append(scratch, Format.Backend...)
	scratch = binary.AppendUvarint(scratch, uint64(Format.Version))
	scratch = binary.BigEndian.AppendUint64(scratch, v.savepoint)
	scratch = binary.BigEndian.AppendUint64(scratch, uint64(v.tree.Len()))
	size := int64(len(scratch))
	_, err := bw.Write(scratch)
	v.tree.Ascend(func(it item) bool {
		scratch = binary.AppendUvarint(scratch[:0], uint64(len(it.key)))
		scratch = append(scratch, it.key...)
		scratch = binary.BigEndian.AppendUint64(scratch, it.ver.Block)
		scratch = binary.BigEndian.AppendUint32(scratch, it.ver.Tx)
		scratch = binary.AppendUvarint(scratch, uint64(len(it.data)))
		size += int64(len(scratch) + len(it.data))
		if _, err = bw.Write(scratch); err == nil {
			_, err = bw.Write(it.data)
		}
		return err == nil
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return 0, err
	}
	_, err = f.Write(binary.BigEndian.AppendUint32(nil, cw.sum))
	return size + 4, err
}

// crcReader reads through a buffer and hashes exactly the bytes its
// caller consumed (the buffer's read-ahead is not hashed until consumed).
type crcReader struct {
	r   *bufio.Reader
	sum uint32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.sum = crc32.Update(c.sum, crcTable, p[:n])
	return n, err
}

func (c *crcReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.sum = crc32.Update(c.sum, crcTable, []byte{b})
	}
	return b, err
}

// readCheckpoint loads the checkpoint file at path. A file of another
// backend or format version is refused with statedb.ErrFormat naming
// both; a damaged one with statedb.ErrCorrupt.
func readCheckpoint(path string) (*version, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("memdb: %w", err)
	}
	defer f.Close()
	r := &crcReader{r: bufio.NewReaderSize(f, 1<<20)}
	v, err := decodeEntries(r, path)
	if err != nil {
		return nil, err
	}
	sum := r.sum // of every byte consumed so far: all before the CRC
	var trailer [5]byte
	n, err := io.ReadFull(r.r, trailer[:])
	if n != 4 || !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, corrupt(path, "the file does not end with its 4-byte CRC after the last entry")
	}
	if got := binary.BigEndian.Uint32(trailer[:4]); got != sum {
		return nil, corrupt(path, fmt.Sprintf("CRC %08x, want %08x", got, sum))
	}
	return v, nil
}

func corrupt(path, what string) error {
	return fmt.Errorf("%w: checkpoint %s: %s; move it away to start from the checkpoint before it (or from an empty state), which the peer then catches up from its block store",
		statedb.ErrCorrupt, path, what)
}

// decodeEntries reads a checkpoint's header and entries.
func decodeEntries(r *crcReader, path string) (*version, error) {
	magic := make([]byte, len(ckptMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != ckptMagic {
		return nil, fmt.Errorf("%w: %s does not start with %q, so it is no checkpoint; this is %s", statedb.ErrFormat, path, ckptMagic, Format)
	}
	name, err := readBytes(r, 256)
	if err != nil {
		return nil, corrupt(path, "header: "+err.Error())
	}
	fv, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, corrupt(path, "header: "+err.Error())
	}
	if got := (statedb.Format{Backend: string(name), Version: int(fv)}); got != Format {
		return nil, fmt.Errorf("%w: checkpoint %s was written by %s; this is %s: move it away to rebuild the state from the block store",
			statedb.ErrFormat, path, got, Format)
	}
	var fixed [16]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return nil, corrupt(path, "header: "+err.Error())
	}
	v := &version{tree: btree.NewG(degree, less), savepoint: binary.BigEndian.Uint64(fixed[:8])}
	count := binary.BigEndian.Uint64(fixed[8:])
	var prev string
	for i := range count {
		key, err := readBytes(r, 1<<30)
		if err != nil {
			return nil, corrupt(path, fmt.Sprintf("entry %d of %d: key: %v", i, count, err))
		}
		if _, _, err := statedb.SplitKey(key); err != nil || (i > 0 && string(key) <= prev) {
			return nil, corrupt(path, fmt.Sprintf("entry %d of %d: key %q is not a namespaced key above the one before", i, count, key))
		}
		var ver [12]byte
		if _, err := io.ReadFull(r, ver[:]); err != nil {
			return nil, corrupt(path, fmt.Sprintf("entry %d of %d: version: %v", i, count, err))
		}
		data, err := readBytes(r, 1<<32)
		if err != nil {
			return nil, corrupt(path, fmt.Sprintf("entry %d of %d: value: %v", i, count, err))
		}
		it := item{key: string(key), data: data, ver: statedb.Version{
			Block: binary.BigEndian.Uint64(ver[:8]), Tx: binary.BigEndian.Uint32(ver[8:]),
		}}
		prev = it.key
		v.tree.ReplaceOrInsert(it)
	}
	return v, nil
}

// readBytes reads a uvarint length, at most max, and that many bytes.
// A damaged length cannot make it allocate much more than the file holds:
// long fields grow as they are read.
func readBytes(r *crcReader, max uint64) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > max {
		return nil, fmt.Errorf("length %d, over the limit %d", n, max)
	}
	if n <= 1<<16 {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, err
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err == nil && uint64(len(b)) != n {
		err = io.ErrUnexpectedEOF
	}
	return b, err
}

// checkpointFiles lists the savepoints of dir's checkpoint files, newest
// first, and deletes the temporary files an interrupted checkpoint left.
func checkpointFiles(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("memdb: list checkpoints: %w", err)
	}
	var sps []uint64
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), tmpSuffix) && strings.HasPrefix(e.Name(), ckptPrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return nil, fmt.Errorf("memdb: remove an interrupted checkpoint: %w", err)
			}
			continue
		}
		if sp, ok := parseCkptName(e.Name()); ok {
			sps = append(sps, sp)
		}
	}
	slices.Sort(sps)
	slices.Reverse(sps)
	return sps, nil
}

// pruneCheckpoints deletes all but the newest ckptKeep checkpoint files.
func pruneCheckpoints(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("memdb: list checkpoints: %w", err)
	}
	var sps []uint64
	for _, e := range entries {
		if sp, ok := parseCkptName(e.Name()); ok {
			sps = append(sps, sp)
		}
	}
	slices.Sort(sps)
	for _, sp := range sps[:max(0, len(sps)-ckptKeep)] {
		if err := os.Remove(filepath.Join(dir, ckptName(sp))); err != nil {
			return fmt.Errorf("memdb: remove an old checkpoint: %w", err)
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
