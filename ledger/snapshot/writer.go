package snapshot

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"io"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// Writer writes a snapshot file: NewWriter, then State for every key in
// ascending order, then Tx for every id in ascending order, then Finish.
// It refuses what Read would refuse, so a file it finishes is readable.
// The first error sticks.
type Writer struct {
	out io.Writer     // the file
	w   *bufio.Writer // into out and sum
	sum hash.Hash

	phase    byte   // tagState, then tagTx once a Tx is written, then tagEnd
	lastKey  []byte // encoded key of the last State
	lastID   string // id of the last Tx
	maxBlock uint64 // highest version or tx block written, plus one
	states   uint64
	txs      uint64
	rec      []byte
	err      error
}

// NewWriter starts a snapshot of channel, whose genesis block is genesis,
// on w.
func NewWriter(w io.Writer, channel string, genesis []byte) (*Writer, error) {
	if channel == "" || len(channel) > maxChannel {
		return nil, fmt.Errorf("snapshot: channel name %.40q: want 1 to %d bytes", channel, maxChannel)
	}
	p := appendString(nil, channel)
	p = appendString(p, string(genesis))
	if len(genesis) == 0 || len(p) > maxRecord {
		return nil, fmt.Errorf("snapshot: genesis block of %d bytes: want 1 to about %d", len(genesis), maxRecord)
	}
	sw := &Writer{out: w, sum: sha256.New(), phase: tagState}
	sw.w = bufio.NewWriterSize(io.MultiWriter(w, sw.sum), 1<<20)
	head := binary.LittleEndian.AppendUint32([]byte(magic), Version)
	sw.write(head)
	sw.record(tagHeader, p)
	return sw, sw.err
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func (sw *Writer) write(p []byte) {
	if sw.err == nil {
		_, sw.err = sw.w.Write(p)
	}
}

func (sw *Writer) record(tag byte, payload []byte) {
	var hdr [1 + binary.MaxVarintLen64]byte
	hdr[0] = tag
	n := binary.PutUvarint(hdr[1:], uint64(len(payload)))
	sw.write(hdr[:1+n])
	sw.write(payload)
}

func (sw *Writer) fail(format string, a ...any) error {
	if sw.err == nil {
		sw.err = fmt.Errorf("snapshot: "+format, a...)
	}
	return sw.err
}

// State adds key of namespace ns with its value. Keys must come in
// ascending order of statedb.AppendKey(ns, key), before any Tx.
func (sw *Writer) State(ns, key string, v statedb.Value) error {
	if sw.err != nil {
		return sw.err
	}
	if sw.phase != tagState {
		return sw.fail("state key %q of %q written after the tx ids", key, ns)
	}
	if err := statedb.CheckNamespace(ns); err != nil {
		return sw.fail("state key %q: %v", key, err)
	}
	enc := statedb.AppendKey(nil, ns, key)
	if sw.states > 0 && bytes.Compare(enc, sw.lastKey) <= 0 {
		return sw.fail("state key %q of %q is not after the previous key (keys must ascend)", key, ns)
	}
	p := appendString(sw.rec[:0], ns)
	p = appendString(p, key)
	p = binary.AppendUvarint(p, v.Version.Block)
	p = binary.AppendUvarint(p, uint64(v.Version.Tx))
	p = append(p, v.Data...)
	if len(p) > maxRecord {
		return sw.fail("state key %q of %q: value of %d bytes, at most %d allowed", key, ns, len(v.Data), maxRecord)
	}
	sw.record(tagState, p)
	sw.rec, sw.lastKey = p, enc
	sw.maxBlock = max(sw.maxBlock, v.Version.Block+1)
	sw.states++
	return sw.err
}

// Tx adds a transaction id committed below the snapshot's height. Ids
// must come in ascending order, after every State.
func (sw *Writer) Tx(t ledger.TxRecord) error {
	if sw.err != nil {
		return sw.err
	}
	if sw.phase == tagEnd {
		return sw.fail("tx %q written after Finish", t.ID)
	}
	sw.phase = tagTx
	switch {
	case t.ID == "" || len(t.ID) > maxTxID:
		return sw.fail("tx id %.40q: want 1 to %d bytes", t.ID, maxTxID)
	case sw.txs > 0 && t.ID <= sw.lastID:
		return sw.fail("tx id %q is not after the previous id %q (ids must ascend)", t.ID, sw.lastID)
	case !api.TxIDCounts(t.Code):
		return sw.fail("tx %q has code %v, which does not claim its id", t.ID, t.Code)
	}
	p := binary.AppendUvarint(sw.rec[:0], t.Block)
	p = binary.AppendUvarint(p, uint64(t.Tx))
	p = append(p, byte(t.Code))
	p = append(p, t.ID...)
	sw.record(tagTx, p)
	sw.rec, sw.lastID = p, t.ID
	sw.maxBlock = max(sw.maxBlock, t.Block+1)
	sw.txs++
	return sw.err
}

// Finish ends the snapshot at height (every version and tx block written
// must be below it), with prevHash the header hash of block height-1,
// writes the checksum and flushes. It returns the checksum.
func (sw *Writer) Finish(height uint64, prevHash []byte) ([]byte, error) {
	if sw.err != nil {
		return nil, sw.err
	}
	switch {
	case height == 0:
		return nil, sw.fail("height 0: a snapshot holds at least the genesis block")
	case sw.maxBlock > height:
		return nil, sw.fail("a version or tx id names block %d, not below the height %d", sw.maxBlock-1, height)
	case len(prevHash) != api.HashSize:
		return nil, sw.fail("previous hash of %d bytes, want %d", len(prevHash), api.HashSize)
	}
	sw.phase = tagEnd
	p := binary.AppendUvarint(nil, height)
	p = append(p, prevHash...)
	p = binary.AppendUvarint(p, sw.states)
	p = binary.AppendUvarint(p, sw.txs)
	sw.record(tagEnd, p)
	if sw.err == nil {
		sw.err = sw.w.Flush()
	}
	if sw.err != nil {
		return nil, sw.err
	}
	sum := sw.sum.Sum(nil)
	if _, err := sw.out.Write(sum); err != nil { // not summed itself
		sw.err = err
		return nil, err
	}
	return sum, nil
}
