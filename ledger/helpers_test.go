package ledger

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/strand-ledger/strand/api"
	"google.golang.org/protobuf/proto"
)

// chain builds properly chained test blocks.
type chain struct {
	next uint64
	prev []byte
}

// txBytes returns transaction j of block n: two of every three carry a tx
// id in an otherwise invalid transaction (DecodeTx fails after the header
// decodes); every third is junk with no id.
func txBytes(n uint64, j int) ([]byte, string) {
	if j%3 == 2 {
		return []byte{0xff, byte(n), byte(j), 0x01}, ""
	}
	id := fmt.Sprintf("tx-%d-%d", n, j)
	payload, err := proto.Marshal(&api.TxPayload{Header: &api.TxHeader{TxId: id}})
	if err != nil {
		panic(err)
	}
	raw, err := proto.Marshal(&api.Transaction{Payload: payload, Signature: []byte("sig")})
	if err != nil {
		panic(err)
	}
	return raw, id
}

// block returns the next block with ntx transactions; codes, if given,
// overrides transaction j's code and id (a non-nil ids[j] replaces the id).
func (c *chain) block(ntx int, codes map[int]api.TxValidationCode, ids map[int]string) Entry {
	n := c.next
	e := Entry{Number: n, PrevHash: c.prev}
	var txs [][]byte
	for j := 0; j < ntx; j++ {
		raw, id := txBytes(n, j)
		if alt, ok := ids[j]; ok {
			id = alt
			payload, _ := proto.Marshal(&api.TxPayload{Header: &api.TxHeader{TxId: id}})
			raw, _ = proto.Marshal(&api.Transaction{Payload: payload, Signature: []byte("sig")})
		}
		txs = append(txs, raw)
		e.TxIDs = append(e.TxIDs, id)
		e.Codes = append(e.Codes, byte(codes[j]))
	}
	h := &api.BlockHeader{Number: n, PreviousHash: c.prev, DataHash: api.DataHash(txs)}
	raw, err := proto.Marshal(&api.Block{Header: h, Transactions: txs, Metadata: &api.BlockMetadata{ValidationCodes: e.Codes}})
	if err != nil {
		panic(err)
	}
	e.Raw = raw
	e.HeaderHash = api.HeaderHash(h)
	c.next, c.prev = n+1, e.HeaderHash
	return e
}

// blocks returns n blocks of ntx transactions each.
func (c *chain) blocks(n, ntx int) []Entry {
	es := make([]Entry, n)
	for i := range es {
		es[i] = c.block(ntx, nil, nil)
	}
	return es
}

func openStore(t testing.TB, dir string, opts Options) *BlockStore {
	t.Helper()
	s, err := OpenBlockStore(dir, opts)
	if err != nil {
		t.Fatalf("OpenBlockStore(%s): %v", dir, err)
	}
	return s
}

func mustAppend(t testing.TB, s *BlockStore, es []Entry) {
	t.Helper()
	if err := s.Append(es); err != nil {
		t.Fatalf("Append(blocks %d..): %v", es[0].Number, err)
	}
}

// checkContents checks that s holds exactly es[:h] and indexes their txs
// and no tx of es[h:].
func checkContents(t *testing.T, s *BlockStore, es []Entry, h int) {
	t.Helper()
	if got := s.Height(); got != uint64(h) {
		t.Fatalf("Height = %d, want %d", got, h)
	}
	for i, e := range es {
		raw, err := s.RawBlock(e.Number)
		if i >= h {
			if err == nil {
				t.Fatalf("RawBlock(%d) above height %d succeeded", i, h)
			}
		} else if err != nil || string(raw) != string(e.Raw) {
			t.Fatalf("RawBlock(%d) = %d bytes, %v; want the appended %d bytes", i, len(raw), err, len(e.Raw))
		}
		for j, id := range e.TxIDs {
			if id == "" || api.TxValidationCode(e.Codes[j]) == api.TxValidationCode_DUPLICATE_TXID {
				continue
			}
			loc, ok, err := s.TxLocation(id)
			if err != nil {
				t.Fatalf("TxLocation(%q): %v", id, err)
			}
			if i >= h {
				if ok {
					t.Fatalf("TxLocation(%q) of cut block %d found %+v", id, i, loc)
				}
				continue
			}
			want := Location{Block: uint64(i), Tx: uint32(j), Code: api.TxValidationCode(e.Codes[j])}
			if !ok || loc != want {
				t.Fatalf("TxLocation(%q) = %+v, %v; want %+v", id, loc, ok, want)
			}
		}
	}
	if h > 0 && string(s.LastHash()) != string(es[h-1].HeaderHash) {
		t.Fatalf("LastHash = %x, want %x", s.LastHash(), es[h-1].HeaderHash)
	}
	if err := s.VerifyChain(); err != nil {
		t.Fatalf("VerifyChain: %v", err)
	}
}

// copyDir copies a closed store's directory to a fresh one.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func segPath(dir string, n int) string { return filepath.Join(dir, "blocks", segmentName(n)) }
