package orderer

import (
	"bytes"
	"crypto/tls"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/orderer/cut"
)

func TestEntryRoundTrip(t *testing.T) {
	e := blockEntry{Proposer: 3, Term: 7, Seq: 1 << 40, batch: batch{Batch: cut.Batch{
		Txs: [][]byte{[]byte("tx-one"), {}, bytes.Repeat([]byte{0xff}, 300)},
		IDs: []string{"id1", "", "id3"},
	}}}
	got, err := decodeEntry(encodeEntry(nil, e))
	if err != nil {
		t.Fatal(err)
	}
	if got.Proposer != 3 || got.Term != 7 || got.Seq != 1<<40 || len(got.Txs) != 3 {
		t.Fatalf("decoded %+v", got)
	}
	for i := range e.Txs {
		if !bytes.Equal(got.Txs[i], e.Txs[i]) || got.IDs[i] != e.IDs[i] {
			t.Fatalf("tx %d: %q/%q, want %q/%q", i, got.IDs[i], got.Txs[i], e.IDs[i], e.Txs[i])
		}
	}
	s := snapState{Height: 42, Hash: bytes.Repeat([]byte{1}, 32)}
	gs, err := decodeSnap(encodeSnap(s))
	if err != nil || gs.Height != 42 || !bytes.Equal(gs.Hash, s.Hash) {
		t.Fatalf("snapshot round trip: %+v, %v", gs, err)
	}
	s.Config = &configState{Seq: 3, MaxID: 5, Peers: []RaftPeer{{ID: 1, Org: "O", Name: "o1", Address: "a:1"}, {ID: 5, Org: "O", Name: "o5", Address: "a:5"}}}
	gs, err = decodeSnap(encodeSnap(s))
	if err != nil || gs.Config == nil || !reflect.DeepEqual(*gs.Config, *s.Config) {
		t.Fatalf("snapshot with config round trip: %+v, %v", gs.Config, err)
	}
	v1 := append([]byte{1}, encodeSnap(snapState{Height: 42, Hash: s.Hash})[1:]...)
	if gs, err := decodeSnap(v1); err != nil || gs.Height != 42 || gs.Config != nil {
		t.Fatalf("version 1 snapshot: %+v, %v", gs, err)
	}
}

func TestEntryRefusesBadBytes(t *testing.T) {
	good := encodeEntry(nil, blockEntry{Proposer: 1, batch: batch{Batch: cut.Batch{Txs: [][]byte{[]byte("x")}, IDs: []string{"i"}}}})
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"empty", nil, "version 0"},
		{"wrong version", append([]byte{9}, good[1:]...), "version 9"},
		{"truncated", good[:len(good)-1], "field of 1 bytes, 0 left"},
		{"trailing", append(append([]byte{}, good...), 0), "1 trailing bytes"},
		{"no txs", encodeEntry(nil, blockEntry{}), "no transactions"},
		{"huge count", []byte{entryVersion, 1, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}, "transactions in"},
	} {
		_, err := decodeEntry(c.raw)
		if !errors.Is(err, ErrBadEntry) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadEntry containing %q", c.name, err, c.want)
		}
	}
	if _, err := decodeSnap([]byte{snapshotVersion, 5, 0}); !errors.Is(err, ErrBadEntry) {
		t.Errorf("snapshot with a height but no hash: %v", err)
	}
}

// FuzzDecodeEntry: committed entries are network input (a member's
// proposal); decoding must never panic, and what decodes re-encodes to
// the same bytes.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(nil, blockEntry{Proposer: 1, Term: 2, Seq: 3, batch: batch{Batch: cut.Batch{Txs: [][]byte{[]byte("a")}, IDs: []string{"b"}}}}))
	f.Add(encodeSnap(snapState{Height: 1, Hash: []byte{1}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		if e, err := decodeEntry(raw); err == nil && !bytes.Equal(encodeEntry(nil, e), raw) {
			t.Fatalf("entry %x re-encodes differently", raw)
		}
		decodeSnap(raw)
	})
}

func TestRaftConfigValidate(t *testing.T) {
	good := func() RaftConfig {
		c := RaftConfig{ID: 1, Dir: "d", ClientTLS: &tls.Config{}, Peers: []RaftPeer{
			{ID: 1, Org: "O", Name: "a", Address: "h:1"}, {ID: 2, Org: "O", Name: "b", Address: "h:2"}}}
		c.EnsureDefaults()
		return c
	}
	for _, c := range []struct {
		name string
		edit func(*RaftConfig)
		want string
	}{
		{"no tls", func(c *RaftConfig) { c.ClientTLS = nil }, "ClientTLS is nil"},
		{"id 0", func(c *RaftConfig) { c.ID = 0 }, "RaftConfig.ID is 0"},
		{"not a peer", func(c *RaftConfig) { c.ID = 5 }, "ID 5 is not among the 2 Peers"},
		{"dup id", func(c *RaftConfig) { c.Peers[1].ID = 1 }, "repeats ID 1"},
		{"dup name", func(c *RaftConfig) { c.Peers[1].Name = "a" }, "repeats orderer O/a"},
		{"no address", func(c *RaftConfig) { c.Peers[1].Address = "" }, "has no Address"},
		{"ticks", func(c *RaftConfig) { c.ElectionTicks = 1 }, "want 1 <= heartbeat < election"},
		{"no dir", func(c *RaftConfig) { c.Dir = "" }, "RaftConfig.Dir is empty"},
	} {
		cfg := good()
		c.edit(&cfg)
		if err := cfg.Validate(); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadConfig containing %q", c.name, err, c.want)
		}
	}
	single := RaftConfig{ID: 1, Dir: "d", Peers: []RaftPeer{{ID: 1, Org: "O", Name: "a"}}}
	single.EnsureDefaults()
	if err := single.Validate(); err != nil {
		t.Errorf("a one-member cluster needs no TLS or address: %v", err)
	}
}
