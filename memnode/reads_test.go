package memnode_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode"
	"github.com/strand-ledger/strand/memnode/memnodetest"
)

// TestReadStreamConcurrent: many reads at once from one client (no
// cache: every read goes to the node) share its read stream, and each
// gets its own keys' answers.
func TestReadStreamConcurrent(t *testing.T) {
	_, n, w := writer(t, memnode.ServerOptions{}, 0)
	var b statedb.Batch
	const keys = 64
	for i := range keys {
		b.Put("ns", fmt.Sprint("k", i), []byte(fmt.Sprint("v", i)), statedb.Version{Block: 0, Tx: uint32(i)})
	}
	if err := w.Apply(&b, 1, false); err != nil {
		t.Fatal(err)
	}
	c, err := n.Dial(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 100 {
				ks := make([]statedb.Key, 1+rng.IntN(3))
				for j := range ks {
					ks[j] = statedb.Key{Namespace: "ns", Key: fmt.Sprint("k", rng.IntN(keys+8))} // some never written
				}
				out := make([]statedb.Result, len(ks))
				vout := make([]statedb.VersionResult, len(ks))
				err := c.GetMany(ks, out)
				if err == nil {
					err = c.GetVersions(ks, vout)
				}
				if err != nil {
					errs <- err
					return
				}
				for j, k := range ks {
					var i int
					fmt.Sscanf(k.Key, "k%d", &i)
					wantFound := i < keys
					if out[j].Found != wantFound || vout[j].Found != wantFound ||
						(wantFound && (string(out[j].Value.Data) != fmt.Sprint("v", i) || out[j].Value.Version.Tx != uint32(i) || vout[j].Version.Tx != uint32(i))) {
						errs <- fmt.Errorf("%s: value %q found %v version %v, versions-only found %v %v", k.Key, out[j].Value.Data, out[j].Found, out[j].Value.Version, vout[j].Found, vout[j].Version)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestReadStreamAnswersErrors: the node answers each read of a stream
// message on its own; a bad read fails with the code GetMany would
// have, the others are answered.
func TestReadStreamAnswersErrors(t *testing.T) {
	tl, n, w := writer(t, memnode.ServerOptions{}, 0)
	put(t, w, 1, "k", "v")
	raw := rawClient(t, n.Addr(), tl.Client)
	st, err := raw.Reads(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	err = st.Send(&api.MemReads{Reads: []*api.MemRead{
		{Id: 7, Keys: []*api.MemKey{{Namespace: []byte("bad\x00ns"), Key: []byte("k")}}},
		{Id: 9, Keys: []*api.MemKey{{Namespace: []byte("ns"), Key: []byte("k")}}, VersionsOnly: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.GetAnswers()) != 2 {
		t.Fatalf("%d answers; want 2", len(m.GetAnswers()))
	}
	bad, good := m.GetAnswers()[0], m.GetAnswers()[1]
	if bad.GetId() != 7 || codes.Code(bad.GetCode()) != codes.InvalidArgument || !strings.Contains(bad.GetMessage(), "GetMany") {
		t.Errorf("bad read's answer: id %d code %v %q; want id 7, InvalidArgument naming GetMany", bad.GetId(), codes.Code(bad.GetCode()), bad.GetMessage())
	}
	if good.GetId() != 9 || good.GetCode() != 0 || good.GetHeight() != 1 || len(good.GetValues()) != 1 ||
		!good.GetValues()[0].GetFound() || good.GetValues()[0].GetData() != nil {
		t.Errorf("good read's answer: %v; want id 9 at height 1, found, no data (versions only)", good)
	}
}

// TestReadStreamClose: a node's Close ends the read stream a client
// holds open and idle (the client half-closes it when asked), so Close
// does not wait for its cut-off; the client's next read finds the node
// unavailable, and once it is back, reads on a new stream.
func TestReadStreamClose(t *testing.T) {
	defer memnode.SetCloseGrace(memnode.SetCloseGrace(time.Hour))
	tl, err := memnodetest.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	n, err := memnodetest.Start(tl, t.TempDir(), tiered.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Close() }()
	w, err := n.Dial(-1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	put(t, w, 1, "k", "v")
	if _, _, err := w.Get("ns", "k"); err != nil { // opens the stream
		t.Fatal(err)
	}
	if err := n.Close(); err != nil { // would wait an hour for the stream
		t.Fatal(err)
	}
	if _, _, err := w.Get("ns", "k"); !errors.Is(err, statedb.ErrUnavailable) || !strings.Contains(err.Error(), n.Addr()) {
		t.Fatalf("Get from a closed node: %v; want ErrUnavailable naming %s", err, n.Addr())
	}
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	v, _, err := w.Get("ns", "k")
	for deadline := time.Now().Add(30 * time.Second); errors.Is(err, statedb.ErrUnavailable) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // the client reconnects
		v, _, err = w.Get("ns", "k")
	}
	if err != nil || string(v.Data) != "v" {
		t.Fatalf("Get after the restart: %q, %v; want v", v.Data, err)
	}
}

// TestReadStreamLimit: a client's read streams are counted apart from
// its calls: with one of each allowed, a call runs beside an open read
// stream, and a second read stream is refused naming the limit.
func TestReadStreamLimit(t *testing.T) {
	tl, n, w := writer(t, memnode.ServerOptions{Limits: memnode.Limits{MaxCallsPerClient: 1}}, -1)
	put(t, w, 1, "k", "v")
	if _, _, err := w.Get("ns", "k"); err != nil { // w's stream, open from here on
		t.Fatal(err)
	}
	if _, err := w.Savepoint(); err != nil {
		t.Fatal(err)
	}
	if err := w.Scan("ns", "", "", func(string, statedb.Value) bool { return true }); err != nil {
		t.Fatalf("a scan beside the open read stream: %v", err)
	}
	raw := rawClient(t, n.Addr(), tl.Client) // the same name as w
	st, err := raw.Reads(t.Context())
	if err == nil {
		err = st.Send(&api.MemReads{Reads: []*api.MemRead{{Id: 1, Keys: []*api.MemKey{{Namespace: []byte("ns"), Key: []byte("k")}}}}})
	}
	// Send returns io.EOF when the server ended the stream first (it
	// refuses it at once); the status is Recv's to tell, as gRPC says.
	if err == nil || errors.Is(err, io.EOF) {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "maxCallsPerClient") || !strings.Contains(err.Error(), "read streams") {
		t.Fatalf("a second read stream: %v; want ResourceExhausted naming maxCallsPerClient and read streams", err)
	}
}

// TestVersionReadsCached: a key's version read from the node (a
// committer's MVCC check of a key its cache had evicted) is cached
// without its value, so the next version read of it sends nothing,
// while a read of its value still goes to the node; the client counts
// its messages by kind.
func TestVersionReadsCached(t *testing.T) {
	_, _, w := writer(t, memnode.ServerOptions{}, 4<<10) // room for a few dozen keys
	put(t, w, 1, "def", "definition")
	for h := uint64(2); h < 12; h++ { // evicts def from the cache
		var kv []string
		for i := range 10 {
			kv = append(kv, fmt.Sprint("k", h, "-", i), strings.Repeat("v", 40))
		}
		put(t, w, h, kv...)
	}
	keys := []statedb.Key{{Namespace: "ns", Key: "def"}}
	out := make([]statedb.VersionResult, 1)
	before := w.Metrics()
	for i := range 2 {
		if err := w.GetVersions(keys, out); err != nil {
			t.Fatal(err)
		}
		if !out[0].Found || out[0].Version != (statedb.Version{Block: 1}) {
			t.Fatalf("version read %d of def: %+v; want found at 1:0", i, out[0])
		}
	}
	m := w.Metrics()
	if m.VersionCalls != before.VersionCalls+1 || m.VersionReads != before.VersionReads+1 || m.CacheHits != before.CacheHits+1 {
		t.Errorf("two version reads of an evicted key: %d version messages, %d keys, %d cache hits more; want 1, 1 and 1",
			m.VersionCalls-before.VersionCalls, m.VersionReads-before.VersionReads, m.CacheHits-before.CacheHits)
	}
	v, found, err := w.Get("ns", "def")
	if err != nil || !found || string(v.Data) != "definition" {
		t.Fatalf("Get(def) after its version was cached: %q, %v, %v", v.Data, found, err)
	}
	if m2 := w.Metrics(); m2.ValueCalls != m.ValueCalls+1 || m2.Applies != before.Applies {
		t.Errorf("Get of a key cached without its value: %d value messages, %d applies more; want 1 and 0", m2.ValueCalls-m.ValueCalls, m2.Applies-before.Applies)
	}
}
