package memnode

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// TestBacklog runs the subscriber's backlog through pushes and takes
// (ops: "pushH:size" publishes the change to height H costing size,
// "take" takes) and compares what each take returns ("rH" a resync at H,
// "H" a change to H), with a bound of 100 bytes.
func TestBacklog(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  string
		want string // the takes' results, "|" between takes
		over int    // overflows
	}{
		{"starts with a resync", "take", "r5", 0},
		{"changes in order", "take push6:40 push7:40 take push8:10 take take", "r5|6 7|8|", 0},
		{"overflow becomes a resync at the newest height", "take push6:60 push7:60 push8:10 take push9:10 take", "r5|r8|9", 1},
		{"behind before the first take: one resync", "push6:60 push7:60 take", "r7", 0},
		{"a change larger than the whole bound", "take push6:101 take", "r5|r6", 1},
		{"exactly the bound fits", "take push6:50 push7:50 take", "r5|6 7", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := backlog{max: 100, resync: true, height: 5}
			var takes []string
			over := 0
			for _, op := range strings.Fields(tc.ops) {
				if op == "take" {
					var got []string
					for _, m := range b.take(99, 1) {
						if m.GetHead() != 99 || m.GetEpoch() != 1 {
							t.Fatalf("take: message %v without head 99 and epoch 1", m)
						}
						if m.GetResync() {
							got = append(got, fmt.Sprint("r", m.GetHeight()))
						} else {
							got = append(got, fmt.Sprint(m.GetHeight()))
						}
					}
					takes = append(takes, strings.Join(got, " "))
					continue
				}
				var h uint64
				var size int
				if _, err := fmt.Sscanf(op, "push%d:%d", &h, &size); err != nil {
					t.Fatalf("op %q: %v", op, err)
				}
				if b.push(&api.MemChange{Height: h, From: h - 1}, size) {
					over++
				}
				if b.bytes > b.max {
					t.Fatalf("after %s the backlog holds %d bytes, bound %d", op, b.bytes, b.max)
				}
			}
			if got := strings.Join(takes, "|"); got != tc.want || over != tc.over {
				t.Errorf("takes %q with %d overflows; want %q with %d", got, over, tc.want, tc.over)
			}
		})
	}
}

// TestChangeCodec encodes a batch's change and decodes it: every key,
// encoded, grouped by namespace in the order of first write.
func TestChangeCodec(t *testing.T) {
	var b statedb.Batch
	b.Put("a", "k1", []byte("v"), statedb.Version{})
	b.Delete("b", "", statedb.Version{})
	b.Put("a", strings.Repeat("x", 300), nil, statedb.Version{}) // a two-byte length
	b.Put("b", "k\x00\xff", []byte("v"), statedb.Version{})
	m, size := encodeChange(b.Writes, 3, 5, 1234, 9)
	if len(m.GetNamespaces()) != 2 || size < 300 {
		t.Fatalf("encoded %d groups costing %d bytes; want 2 groups and at least 300 bytes", len(m.GetNamespaces()), size)
	}
	c, err := decodeChange(m)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(ns, k string) string { return string(statedb.AppendKey(nil, ns, k)) }
	want := []string{enc("a", "k1"), enc("a", strings.Repeat("x", 300)), enc("b", ""), enc("b", "k\x00\xff")}
	if !reflect.DeepEqual(c.keys, want) || c.height != 5 || c.from != 3 || c.at != 1234 || c.epoch != 9 || c.resync {
		t.Errorf("decoded %+v; want keys %q, height 5 from 3 at 1234 epoch 9", c, want)
	}
	for _, bad := range []*api.MemChange{
		{Height: 5, From: 5},
		{Height: 5, Resync: true, From: 4},
		{Height: 5, Resync: true, Namespaces: []*api.MemChangedKeys{{Namespace: []byte("a")}}},
		{Height: 5, From: 4, Namespaces: []*api.MemChangedKeys{{Namespace: []byte("bad\x00ns")}}},
		{Height: 5, From: 4, Namespaces: []*api.MemChangedKeys{{}}},
		{Height: 5, From: 4, Namespaces: []*api.MemChangedKeys{{Namespace: []byte("a"), Keys: []byte{5, 'a'}}}},
		{Height: 5, From: 4, Namespaces: []*api.MemChangedKeys{{Namespace: []byte("a"), Keys: []byte{0x80}}}},
	} {
		if _, err := decodeChange(bad); !errors.Is(err, ErrBadChange) {
			t.Errorf("decodeChange(%v) = %v; want ErrBadChange", bad, err)
		}
	}
}

// FuzzDecodeChange feeds arbitrary bytes to the Watch message's decoder
// (as a reader receives them): it must not panic, must refuse with
// ErrBadChange, the namespaces of a change it accepts must name every
// key's, and its keys must encode back to a message that decodes to the
// same keys.
func FuzzDecodeChange(f *testing.F) {
	var b statedb.Batch
	b.Put("ns", "k\x00\xff", []byte("v"), statedb.Version{Block: 7, Tx: 2})
	b.Delete("other", "", statedb.Version{Block: 7, Tx: 3})
	b.Put("ns", strings.Repeat("y", 200), nil, statedb.Version{})
	m, _ := encodeChange(b.Writes, 3, 4, 99, 1)
	seed, _ := proto.Marshal(m)
	f.Add(seed)
	f.Add([]byte{})
	resync, _ := proto.Marshal(resyncMessage(7, 1, 2))
	f.Add(resync)
	bad, _ := proto.Marshal(&api.MemChange{Height: 2, From: 1, Namespaces: []*api.MemChangedKeys{{Namespace: []byte("ns"), Keys: []byte{0xff, 0xff}}}})
	f.Add(bad)
	f.Fuzz(func(t *testing.T, raw []byte) {
		msg := &api.MemChange{}
		if proto.Unmarshal(raw, msg) != nil {
			return
		}
		c, err := decodeChange(msg)
		if err != nil {
			if !errors.Is(err, ErrBadChange) {
				t.Fatalf("decodeChange error %v does not wrap ErrBadChange", err)
			}
			return
		}
		if c.resync {
			return
		}
		writes := make([]statedb.Write, len(c.keys))
		for i, k := range c.keys {
			ns, key, err := statedb.SplitKey([]byte(k))
			if err != nil {
				t.Fatalf("decoded key %q: %v", k, err)
			}
			writes[i] = statedb.Write{Namespace: ns, Key: key}
			if !slices.Contains(c.namespaces, ns) { // what OnChange reports
				t.Fatalf("decoded key %q of namespace %q; the change names namespaces %q", k, ns, c.namespaces)
			}
		}
		again, _ := encodeChange(writes, c.from, c.height, c.at, c.epoch)
		back, err := decodeChange(again)
		if err != nil || !sameKeys(back.keys, c.keys) {
			t.Fatalf("decode(encode(decode(x))) keys = %q, %v; want %q", back.keys, err, c.keys)
		}
	})
}

// sameKeys compares key lists as multisets: encoding regroups them by
// namespace.
func sameKeys(a, b []string) bool {
	count := map[string]int{}
	for _, k := range a {
		count[k]++
	}
	for _, k := range b {
		count[k]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}
