package orderer

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadEntry: a Raft entry or snapshot payload does not decode. A
// committed entry that does not decode is skipped by every member alike
// (so numbering stays identical) and logged.
var ErrBadEntry = errors.New("orderer: malformed raft entry")

const (
	entryVersion    = 1
	snapshotVersion = 2 // 2 adds the config state; 1 still decodes
)

// blockEntry is the payload of one Raft log entry: one cut batch. It
// carries no block number and no previous hash: those follow from the
// position of the entry in the applied log (see "Raft" in doc.go), so an
// entry can never be stale. Proposer, Term and Seq identify the proposal
// to its proposer (stream mode's in-flight count, proposal latency).
type blockEntry struct {
	Proposer, Term, Seq uint64
	batch
}

// encodeEntry appends the encoding of e to buf:
//
//	version byte, proposer, term, seq, count (uvarints),
//	then per transaction: id length, id, tx length, tx.
func encodeEntry(buf []byte, e blockEntry) []byte {
	buf = append(buf, entryVersion)
	buf = binary.AppendUvarint(buf, e.Proposer)
	buf = binary.AppendUvarint(buf, e.Term)
	buf = binary.AppendUvarint(buf, e.Seq)
	buf = binary.AppendUvarint(buf, uint64(len(e.Txs)))
	for i, tx := range e.Txs {
		buf = binary.AppendUvarint(buf, uint64(len(e.IDs[i])))
		buf = append(buf, e.IDs[i]...)
		buf = binary.AppendUvarint(buf, uint64(len(tx)))
		buf = append(buf, tx...)
	}
	return buf
}

// decodeEntry decodes an entry; the transactions alias data.
func decodeEntry(data []byte) (blockEntry, error) {
	d := decoder{b: data}
	if v := d.byte(); v != entryVersion {
		return blockEntry{}, fmt.Errorf("%w: version %d, want %d", ErrBadEntry, v, entryVersion)
	}
	e := blockEntry{Proposer: d.uvarint(), Term: d.uvarint(), Seq: d.uvarint()}
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) { // every tx takes at least 2 bytes
		return blockEntry{}, fmt.Errorf("%w: %d transactions in %d bytes", ErrBadEntry, n, len(data))
	}
	if n == 0 && d.err == nil {
		return blockEntry{}, fmt.Errorf("%w: no transactions, want at least one", ErrBadEntry)
	}
	e.Txs, e.IDs = make([][]byte, 0, n), make([]string, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		e.IDs = append(e.IDs, string(d.bytes()))
		e.Txs = append(e.Txs, d.bytes())
	}
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return blockEntry{}, fmt.Errorf("%w: %v", ErrBadEntry, d.err)
	}
	return e, nil
}

// snapState is the payload of a Raft snapshot: the block store state
// after the snapshot's index. A member that installs a snapshot it is
// behind fetches the missing blocks from another orderer (catch-up).
type snapState struct {
	Height uint64 // blocks below this number are part of the snapshot
	Hash   []byte // header hash of block Height-1; nil if Height is 0
	// Config is the channel config after the snapshot's entries (config
	// updates applied, orderer set); nil in a version 1 snapshot, which
	// predates config updates (the genesis config holds).
	Config *configState
}

// encodeSnap encodes s:
//
//	version byte, height, hash length, hash (uvarints and bytes), then,
//	if s.Config is set: seq, max id, count, and per orderer its id and
//	the lengths and bytes of org, name and address.
func encodeSnap(s snapState) []byte {
	buf := []byte{snapshotVersion}
	buf = binary.AppendUvarint(buf, s.Height)
	buf = binary.AppendUvarint(buf, uint64(len(s.Hash)))
	buf = append(buf, s.Hash...)
	if c := s.Config; c != nil {
		buf = binary.AppendUvarint(buf, c.Seq)
		buf = binary.AppendUvarint(buf, c.MaxID)
		buf = binary.AppendUvarint(buf, uint64(len(c.Peers)))
		for _, p := range c.Peers {
			buf = binary.AppendUvarint(buf, p.ID)
			for _, f := range []string{p.Org, p.Name, p.Address} {
				buf = binary.AppendUvarint(buf, uint64(len(f)))
				buf = append(buf, f...)
			}
		}
	}
	return buf
}

func decodeSnap(data []byte) (snapState, error) {
	d := decoder{b: data}
	v := d.byte()
	if v != 1 && v != snapshotVersion {
		return snapState{}, fmt.Errorf("%w: snapshot version %d, want 1 or %d", ErrBadEntry, v, snapshotVersion)
	}
	s := snapState{Height: d.uvarint(), Hash: d.bytes()}
	if v >= 2 && d.err == nil && len(d.b) > 0 {
		c := &configState{Seq: d.uvarint(), MaxID: d.uvarint()}
		n := d.uvarint()
		if d.err == nil && n > uint64(len(d.b)) {
			d.err = fmt.Errorf("%d orderers in %d bytes", n, len(d.b))
		}
		for i := uint64(0); i < n && d.err == nil; i++ {
			c.Peers = append(c.Peers, RaftPeer{ID: d.uvarint(), Org: string(d.bytes()), Name: string(d.bytes()), Address: string(d.bytes())})
		}
		s.Config = c
	}
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	if d.err == nil && (s.Height == 0) != (len(s.Hash) == 0) {
		d.err = fmt.Errorf("height %d with a hash of %d bytes", s.Height, len(s.Hash))
	}
	if d.err != nil {
		return snapState{}, fmt.Errorf("%w: snapshot: %v", ErrBadEntry, d.err)
	}
	return s, nil
}

// decoder reads varint-framed fields; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errors.New("empty")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errors.New("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("field of %d bytes, %d left", n, len(d.b))
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}
