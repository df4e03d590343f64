package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
)

// testChain makes chained blocks whose transactions carry ids tx-B-J.
type testChain struct {
	next uint64
	prev []byte
}

func (c *testChain) block(t testing.TB, ntx int, code api.TxValidationCode) ledger.Entry {
	n := c.next
	e := ledger.Entry{Number: n, PrevHash: c.prev}
	var txs [][]byte
	for j := 0; j < ntx; j++ {
		id := fmt.Sprintf("tx-%d-%d", n, j)
		payload, err := proto.Marshal(&api.TxPayload{Header: &api.TxHeader{TxId: id}})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := proto.Marshal(&api.Transaction{Payload: payload, Signature: []byte("sig")})
		if err != nil {
			t.Fatal(err)
		}
		txs = append(txs, raw)
		e.TxIDs = append(e.TxIDs, id)
		e.Codes = append(e.Codes, byte(code))
	}
	h := &api.BlockHeader{Number: n, PreviousHash: c.prev, DataHash: api.DataHash(txs)}
	raw, err := proto.Marshal(&api.Block{Header: h, Transactions: txs, Metadata: &api.BlockMetadata{ValidationCodes: e.Codes}})
	if err != nil {
		t.Fatal(err)
	}
	e.Raw, e.HeaderHash = raw, api.HeaderHash(h)
	c.next, c.prev = n+1, e.HeaderHash
	return e
}

// peerLedger is a block store and a Pebble state in a temp dir, with
// blocks 0..n-1 committed (3 txs each after block 0, the last one
// MVCC_READ_CONFLICT, which still claims its id) and keys written.
type peerLedger struct {
	dir   string
	store *ledger.BlockStore
	state *pebbledb.DB
	chain testChain
}

func newPeerLedger(t *testing.T, n int) *peerLedger {
	t.Helper()
	p := &peerLedger{dir: t.TempDir()}
	var err error
	if p.store, err = ledger.OpenBlockStore(filepath.Join(p.dir, "blocks"), ledger.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	if p.state, err = pebbledb.Open(filepath.Join(p.dir, "state"), pebbledb.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.store.Close(); p.state.Close() })
	p.commit(t, n)
	return p
}

// commit appends n blocks and applies their writes.
func (p *peerLedger) commit(t *testing.T, n int) {
	t.Helper()
	for range n {
		ntx := 3
		if p.chain.next == 0 {
			ntx = 1
		}
		e := p.chain.block(t, ntx, api.TxValidationCode_VALID)
		if ntx == 3 {
			e.Codes[2] = byte(api.TxValidationCode_MVCC_READ_CONFLICT)
		}
		if err := p.store.Append([]ledger.Entry{e}); err != nil {
			t.Fatal(err)
		}
		var b statedb.Batch
		for j := 0; j < ntx && e.Number > 0; j++ {
			v := statedb.Version{Block: e.Number, Tx: uint32(j)}
			b.Put("kv", fmt.Sprintf("key%03d", (int(e.Number)*7+j)%50), []byte(fmt.Sprintf("v%d.%d", e.Number, j)), v)
			b.Put("bank", fmt.Sprintf("acct%d", j), bytes.Repeat([]byte{byte(e.Number)}, 100), v)
		}
		if e.Number%5 == 4 {
			b.Delete("kv", fmt.Sprintf("key%03d", e.Number%50), statedb.Version{Block: e.Number})
		}
		if err := p.state.Apply(&b, e.Number+1, false); err != nil {
			t.Fatal(err)
		}
	}
}

func (p *peerLedger) source() Source { return Source{Channel: "ch1", Store: p.store, State: p.state} }

func dumpState(t *testing.T, d statedb.Dumper) (uint64, []string) {
	t.Helper()
	var out []string
	sp, err := d.Dump(func(ns, key string, v statedb.Value) error {
		out = append(out, fmt.Sprintf("%s/%s=%x@%v", ns, key, v.Data, v.Version))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sp, out
}

// TestRoundTrip exports a ledger, loads it into a fresh block store and
// state, checks both, and continues the chain on the copy.
func TestRoundTrip(t *testing.T) {
	a := newPeerLedger(t, 20)
	path := filepath.Join(t.TempDir(), "snap")
	info, err := Export(path, a.source())
	if err != nil {
		t.Fatal(err)
	}
	if info.Height != 20 || info.Channel != "ch1" || info.TxIDs != 1+19*3 || !bytes.Equal(info.PrevHash, a.store.LastHash()) {
		t.Fatalf("Export info: %v", info)
	}
	vinfo, err := Verify(path)
	if err != nil {
		t.Fatal(err)
	}
	if vinfo.String() != info.String() {
		t.Fatalf("Verify: %v\nExport: %v", vinfo, info)
	}

	bdir := t.TempDir()
	state, err := pebbledb.Open(filepath.Join(bdir, "state"), pebbledb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer state.Close()
	checked := false
	if _, err := Load(path, Target{StoreDir: filepath.Join(bdir, "blocks"), State: state, Check: func(in Info) error {
		checked = in.Height == 20
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("Load did not call Check with the file's info")
	}
	store, err := ledger.OpenBlockStore(filepath.Join(bdir, "blocks"), ledger.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	spA, stA := dumpState(t, a.state)
	spB, stB := dumpState(t, state)
	if spA != spB || strings.Join(stA, "\n") != strings.Join(stB, "\n") {
		t.Fatalf("state after load: savepoint %d, %d keys; want %d, %d", spB, len(stB), spA, len(stA))
	}
	if store.Height() != 20 || !bytes.Equal(store.LastHash(), a.store.LastHash()) {
		t.Fatalf("store after load: height %d, last hash %x", store.Height(), store.LastHash())
	}
	for _, id := range []string{"tx-0-0", "tx-7-1", "tx-19-2"} {
		la, okA, _ := a.store.TxLocation(id)
		lb, okB, err := store.TxLocation(id)
		if err != nil || !okA || !okB || la != lb {
			t.Fatalf("TxLocation(%q): source %+v %v, copy %+v %v %v", id, la, okA, lb, okB, err)
		}
	}
	// Block 20 links to block 19 on the copy as on the source.
	next := a.chain.block(t, 2, api.TxValidationCode_VALID)
	if err := store.Append([]ledger.Entry{next}); err != nil {
		t.Fatalf("Append(block 20) after the snapshot: %v", err)
	}

	// A snapshot of the copy (a store with a base) equals the original.
	path2 := filepath.Join(t.TempDir(), "snap2")
	info2, err := Export(path2, Source{Channel: "ch1", Store: store, State: state})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(info2.SHA256, info.SHA256) {
		t.Fatalf("re-export of the loaded ledger: %v\nwant %v", info2, info)
	}
}

// TestExportAtSavepoint exports a ledger whose block store is ahead of
// its state (as in a running peer between its two writes): the snapshot
// is taken at the savepoint, without the later block's tx ids.
func TestExportAtSavepoint(t *testing.T) {
	a := newPeerLedger(t, 5)
	e := a.chain.block(t, 2, api.TxValidationCode_VALID)
	if err := a.store.Append([]ledger.Entry{e}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "snap")
	info, err := Export(path, a.source())
	if err != nil {
		t.Fatal(err)
	}
	if info.Height != 5 || info.TxIDs != 1+4*3 {
		t.Fatalf("Export with the store one block ahead: %v, want height 5 and 13 tx ids", info)
	}
	b, _ := a.store.Block(4)
	if !bytes.Equal(info.PrevHash, api.HeaderHash(b.Header)) {
		t.Fatal("PrevHash is not block 4's header hash")
	}
}

func TestLoadRefusesNonEmpty(t *testing.T) {
	a := newPeerLedger(t, 3)
	path := filepath.Join(t.TempDir(), "snap")
	if _, err := Export(path, a.source()); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, Target{StoreDir: t.TempDir(), State: a.state}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Load into a used state: err = %v", err)
	}
	state, err := pebbledb.Open(t.TempDir(), pebbledb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer state.Close()
	wrong := errors.New("wrong channel")
	if _, err := Load(path, Target{StoreDir: t.TempDir(), State: state, Check: func(Info) error { return wrong }}); !errors.Is(err, wrong) {
		t.Fatalf("Load with a failing Check: err = %v", err)
	}
	if sp, _ := state.Savepoint(); sp != 0 {
		t.Fatalf("a refused Load wrote the state (savepoint %d)", sp)
	}
}

// seal frames body as a snapshot of version ver with a valid checksum.
func seal(ver uint32, body []byte) []byte {
	f := binary.LittleEndian.AppendUint32([]byte(magic), ver)
	f = append(f, body...)
	sum := sha256.Sum256(f)
	return append(f, sum[:]...)
}

func rec(tag byte, payload []byte) []byte {
	return append(binary.AppendUvarint([]byte{tag}, uint64(len(payload))), payload...)
}

func header(ch, genesis string) []byte {
	return rec(tagHeader, appendString(appendString(nil, ch), genesis))
}

func stateRec(ns, key string, block uint64, val string) []byte {
	p := appendString(appendString(nil, ns), key)
	p = binary.AppendUvarint(p, block)
	p = binary.AppendUvarint(p, 0)
	return rec(tagState, append(p, val...))
}

func txRec(id string, block uint64, code api.TxValidationCode) []byte {
	p := binary.AppendUvarint(nil, block)
	p = binary.AppendUvarint(p, 0)
	return rec(tagTx, append(append(p, byte(code)), id...))
}

func endRec(height uint64, states, txs uint64) []byte {
	p := binary.AppendUvarint(nil, height)
	p = append(p, make([]byte, api.HashSize)...)
	p = binary.AppendUvarint(p, states)
	return rec(tagEnd, binary.AppendUvarint(p, txs))
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestReadRefuses hands Read damaged and rule-breaking files; each is
// refused with an error naming the file and the problem.
func TestReadRefuses(t *testing.T) {
	a := newPeerLedger(t, 4)
	good := filepath.Join(t.TempDir(), "snap")
	if _, err := Export(good, a.source()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	h := header("ch", "g")
	valid := cat(h, stateRec("kv", "a", 1, "x"), txRec("t1", 1, api.TxValidationCode_VALID), endRec(2, 1, 1))
	if _, err := ReadFrom(bytes.NewReader(seal(Version, valid)), int64(len(seal(Version, valid))), "valid", Visitor{}); err != nil {
		t.Fatalf("the hand-made valid file: %v", err)
	}
	flip := func(i int) []byte { d := bytes.Clone(data); d[i] ^= 0x40; return d }
	for _, tc := range []struct {
		name string
		file []byte
		want error
		says string
	}{
		{"empty", nil, ErrCorrupt, "too short"},
		{"not a snapshot", []byte(strings.Repeat("x", 100)), ErrCorrupt, "not a strand snapshot"},
		{"other version", seal(2, valid), ErrVersion, "format version 2"},
		{"flipped byte in the state", flip(len(data) / 2), ErrCorrupt, "checksum mismatch"},
		{"flipped checksum", flip(len(data) - 1), ErrCorrupt, "checksum mismatch"},
		{"truncated", data[:len(data)-10], ErrCorrupt, "checksum mismatch"},
		{"no header", seal(Version, cat(stateRec("kv", "a", 1, "x"), endRec(2, 1, 0))), ErrCorrupt, "want the header"},
		{"no end", seal(Version, cat(h, stateRec("kv", "a", 1, "x"))), ErrCorrupt, "before the end record"},
		{"bytes after end", seal(Version, cat(valid, []byte{0})), ErrCorrupt, "after the end record"},
		{"keys out of order", seal(Version, cat(h, stateRec("kv", "b", 1, ""), stateRec("kv", "a", 1, ""), endRec(2, 2, 0))), ErrCorrupt, "must ascend"},
		{"key twice", seal(Version, cat(h, stateRec("kv", "a", 1, ""), stateRec("kv", "a", 1, ""), endRec(2, 2, 0))), ErrCorrupt, "must ascend"},
		{"bad namespace", seal(Version, cat(h, stateRec("k\x00v", "a", 1, ""), endRec(2, 1, 0))), ErrCorrupt, "invalid namespace"},
		{"state after tx", seal(Version, cat(h, txRec("t", 1, 0), stateRec("kv", "a", 1, ""), endRec(2, 1, 1))), ErrCorrupt, "out of place"},
		{"version at height", seal(Version, cat(h, stateRec("kv", "a", 2, ""), endRec(2, 1, 0))), ErrCorrupt, "not below the height 2"},
		{"tx at height", seal(Version, cat(h, txRec("t", 2, 0), endRec(2, 0, 1))), ErrCorrupt, "not below the height 2"},
		{"duplicate code", seal(Version, cat(h, txRec("t", 1, api.TxValidationCode_DUPLICATE_TXID), endRec(2, 0, 1))), ErrCorrupt, "does not claim"},
		{"ids out of order", seal(Version, cat(h, txRec("t2", 1, 0), txRec("t1", 1, 0), endRec(2, 0, 2))), ErrCorrupt, "must ascend"},
		{"wrong counts", seal(Version, cat(h, stateRec("kv", "a", 1, ""), endRec(2, 5, 0))), ErrCorrupt, "counts 5 keys"},
		{"height 0", seal(Version, cat(h, endRec(0, 0, 0))), ErrCorrupt, "height 0"},
		{"huge length", seal(Version, cat(h, []byte{tagState, 0xff, 0xff, 0xff, 0xff, 0x0f})), ErrCorrupt, "record length"},
		{"non-minimal length", seal(Version, cat(h, []byte{tagEnd, 0x80, 0x00})), ErrCorrupt, "malformed record length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.snapshot")
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Verify(path)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Verify: err = %v, want %v naming %s and saying %q", err, tc.want, path, tc.says)
			}
		})
	}
}

func TestWriterRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(w *Writer) error
		says string
	}{
		{"keys out of order", func(w *Writer) error {
			w.State("kv", "b", statedb.Value{})
			return w.State("kv", "a", statedb.Value{})
		}, "must ascend"},
		{"state after tx", func(w *Writer) error {
			w.Tx(ledger.TxRecord{ID: "t"})
			return w.State("kv", "a", statedb.Value{})
		}, "after the tx ids"},
		{"ids out of order", func(w *Writer) error {
			w.Tx(ledger.TxRecord{ID: "b"})
			return w.Tx(ledger.TxRecord{ID: "a"})
		}, "must ascend"},
		{"version at height", func(w *Writer) error {
			w.State("kv", "a", statedb.Value{Version: statedb.Version{Block: 3}})
			_, err := w.Finish(3, make([]byte, api.HashSize))
			return err
		}, "not below the height 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(&bytes.Buffer{}, "ch", []byte("g"))
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.do(w); err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want one saying %q", err, tc.says)
			}
		})
	}
}
