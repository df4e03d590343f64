package orderer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/orderer/cut"
)

var slow = cut.Config{MaxTxs: 100, Timeout: time.Hour} // cuts only by count, bytes or Close

func TestNewRefusesBadConfig(t *testing.T) {
	n := newTestNet(t)
	store := openStore(t, t.TempDir())
	defer store.Close()
	good := n.config(store, cut.Config{})
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no channel", func(c *Config) { c.Channel = "" }, "Config.Channel is empty"},
		{"no registry", func(c *Config) { c.Registry = nil }, "Config.Registry is nil"},
		{"no signer", func(c *Config) { c.Signer = nil }, "Config.Signer is nil"},
		{"no store", func(c *Config) { c.Store = nil }, "Config.Store is nil"},
		{"peer signer", func(c *Config) { c.Signer = n.peer1 }, `"peer1" of org "Org1" has role peer, want orderer`},
		{"client signer", func(c *Config) { c.Signer = n.client1 }, "has role client, want orderer"},
		{"negative queue", func(c *Config) { c.Queue = -5 }, "Config.Queue is -5"},
		{"queue bytes under a transaction", func(c *Config) { c.QueueBytes = 1 << 20 }, "Config.QueueBytes is 1048576, want at least 4194304"},
		{"negative timeout", func(c *Config) { c.Batch.Timeout = -time.Second }, "Config.Batch: cut: invalid config: Timeout is -1s"},
	} {
		cfg := good
		c.edit(&cfg)
		o, err := New(cfg)
		if err == nil {
			o.Close()
			t.Errorf("%s: New succeeded", c.name)
			continue
		}
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New: %v, want ErrBadConfig containing %q", c.name, err, c.want)
		}
	}
	// An orderer signer the registry does not know: peers could not verify.
	ca, err := identity.NewCA("OrdererOrg", identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := ca.Issue("orderer9", identity.RoleOrderer, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	cfg := good
	cfg.Signer = stranger
	if _, err := New(cfg); !errors.Is(err, ErrBadConfig) || !errors.Is(err, identity.ErrUntrustedCertificate) {
		t.Errorf("New with an untrusted orderer signer: %v, want ErrBadConfig wrapping ErrUntrustedCertificate", err)
	}
}

// retag re-encodes a transaction after changing its envelope.
func retag(t *testing.T, raw []byte, edit func(*api.Transaction)) []byte {
	t.Helper()
	var tx api.Transaction
	if err := proto.Unmarshal(raw, &tx); err != nil {
		t.Fatal(err)
	}
	edit(&tx)
	out, err := proto.Marshal(&tx)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAdmission(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, slow)
	ctx := context.Background()
	good, _ := n.tx(t, "k")
	badSig := retag(t, good, func(tx *api.Transaction) { tx.Signature = slices.Clone(tx.Signature); tx.Signature[10] ^= 1 })
	otherSigner := retag(t, good, func(tx *api.Transaction) { tx.Signature, _ = n.client2.Sign(tx.Payload) })
	wrongCh, _ := n.txFor(t, "ch2", n.client1, "k")
	unknownOrg, _ := n.txFor(t, testChannel, n.unknownOrgClient, "k")
	foreign, _ := n.txFor(t, testChannel, n.foreignClient, "k")
	byPeer, _ := n.txFor(t, testChannel, n.peer1, "k")
	byOrderer, _ := n.txFor(t, testChannel, n.orderer, "k")
	cases := []struct {
		name   string
		raw    []byte
		want   error
		status int32
		msg    string
	}{
		{"client of Org1", good, nil, 200, ""},
		{"ed25519 client of Org2", first(n.txFor(t, testChannel, n.client2, "k")), nil, 200, ""},
		{"admin of Org1", first(n.txFor(t, testChannel, n.admin1, "k")), nil, 200, ""},
		{"empty", nil, ErrMalformed, 400, "empty transaction envelope"},
		{"garbage", []byte("\xff\xff\xff garbage"), ErrMalformed, 400, "transaction envelope"},
		{"truncated", good[:len(good)/2], ErrMalformed, 400, ""},
		{"wrong channel", wrongCh, ErrWrongChannel, 404, `is for channel "ch2", this orderer orders channel "ch1"`},
		{"unknown org", unknownOrg, ErrForbidden, 403, `identity: unknown org: "Org9"`},
		{"foreign CA", foreign, ErrForbidden, 403, "does not chain to a CA"},
		{"peer creator", byPeer, ErrForbidden, 403, "has role peer, want client or admin"},
		{"orderer creator", byOrderer, ErrForbidden, 403, "has role orderer, want client or admin"},
		{"tampered signature", badSig, ErrForbidden, 403, "bad signature"},
		{"signed by someone else", otherSigner, ErrForbidden, 403, "bad signature"},
	}
	admitted := 0
	for _, c := range cases {
		err := o.Submit(ctx, c.raw)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: Submit: %v, want admitted", c.name, err)
			}
			admitted++
			continue
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: Submit: %v, want %v containing %q", c.name, err, c.want, c.msg)
		}
		if got := StatusOf(err); got != c.status {
			t.Errorf("%s: status %d, want %d", c.name, got, c.status)
		}
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	blks := blocks(t, o, 0, 1)
	if len(blks[0].Transactions) != admitted {
		t.Errorf("block holds %d txs, want the %d admitted", len(blks[0].Transactions), admitted)
	}
	m := o.Metrics()
	if m.Submitted != uint64(len(cases)) || m.Admitted != uint64(admitted) || m.Refused.Malformed != 3 ||
		m.Refused.WrongChannel != 1 || m.Refused.Forbidden != 6 || m.Txs != uint64(admitted) || m.Blocks != 1 {
		t.Errorf("metrics: %v", m)
	}
}

func first(raw []byte, _ string) []byte { return raw }

func TestExpiredCreator(t *testing.T) {
	n := newTestNet(t)
	store := openStore(t, t.TempDir())
	defer store.Close()
	cfg := n.config(store, slow)
	cfg.Clock = func() time.Time { return time.Now().Add(100 * 365 * 24 * time.Hour) }
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	raw, _ := n.tx(t, "k")
	if err := o.Submit(context.Background(), raw); !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "certificate expired") {
		t.Errorf("Submit with an expired creator: %v, want ErrForbidden (certificate expired)", err)
	}
}

// submitAll submits txs for keys and returns their ids in order.
func submitAll(t *testing.T, n *testNet, o *Orderer, keys ...string) []string {
	t.Helper()
	var ids []string
	for _, k := range keys {
		raw, id := n.tx(t, k)
		if err := o.Submit(context.Background(), raw); err != nil {
			t.Fatalf("Submit %s: %v", k, err)
		}
		ids = append(ids, id)
	}
	return ids
}

func keys(prefix string, count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = prefix + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	return out
}

func TestCutByCount(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, cut.Config{MaxTxs: 3, Timeout: time.Hour})
	ids := submitAll(t, n, o, keys("k", 7)...)
	blks := blocks(t, o, 0, 2)
	checkChain(t, n.reg, nil, blks)
	for i, b := range blks {
		if len(b.Transactions) != 3 {
			t.Errorf("block %d holds %d txs, want 3", i, len(b.Transactions))
		}
	}
	if got := txIDs(t, blks); !slices.Equal(got, ids[:6]) {
		t.Errorf("tx ids %v, want %v", got, ids[:6])
	}
	if h := o.Height(); h != 2 {
		t.Errorf("Height %d, want 2 (the 7th tx waits for its timeout)", h)
	}
}

func TestCutByBytes(t *testing.T) {
	n := newTestNet(t)
	var raws [][]byte
	var ids []string
	maxSize := 0
	for _, k := range keys("b", 6) {
		raw, id := n.tx(t, k)
		raws, ids = append(raws, raw), append(ids, id)
		maxSize = max(maxSize, len(raw))
	}
	// Room for two transactions but never three (sizes differ by a few
	// signature bytes only).
	o := n.start(t, cut.Config{MaxTxs: 100, MaxBytes: 2*maxSize + 1, Timeout: time.Hour})
	for _, raw := range raws {
		if err := o.Submit(context.Background(), raw); err != nil {
			t.Fatal(err)
		}
	}
	blks := blocks(t, o, 0, 2)
	checkChain(t, n.reg, nil, blks)
	for i, b := range blks {
		if len(b.Transactions) != 2 {
			t.Errorf("block %d holds %d txs, want 2", i, len(b.Transactions))
		}
	}
	if got := txIDs(t, blks); !slices.Equal(got, ids[:4]) {
		t.Errorf("tx ids %v, want %v", got, ids[:4])
	}
}

func TestCutByTimeout(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, cut.Config{MaxTxs: 1000, Timeout: 20 * time.Millisecond})
	ids := submitAll(t, n, o, keys("t", 3)...)
	// The timer may fire between submissions on a loaded machine, so read
	// blocks until all three transactions have arrived.
	var got []string
	var prev []byte
	for next := uint64(0); len(got) < len(ids); next++ {
		b := blocks(t, o, next, 1)
		prev = checkChain(t, n.reg, prev, b)
		got = append(got, txIDs(t, b)...)
	}
	if !slices.Equal(got, ids) {
		t.Errorf("tx ids %v, want %v", got, ids)
	}
}

func TestCloseFlushesAndRefuses(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, slow)
	ids := submitAll(t, n, o, "a", "b")
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if got := txIDs(t, blocks(t, o, 0, 1)); !slices.Equal(got, ids) {
		t.Errorf("after Close the store holds %v, want %v", got, ids)
	}
	raw, _ := n.tx(t, "c")
	if err := o.Submit(context.Background(), raw); !errors.Is(err, ErrClosed) || StatusOf(err) != 503 {
		t.Errorf("Submit after Close: %v, want ErrClosed (503)", err)
	}
}

func TestRestartContinuesChain(t *testing.T) {
	n := newTestNet(t)
	dir := t.TempDir()
	run := func(keys ...string) []string {
		store := openStore(t, dir)
		defer store.Close()
		o, err := New(n.config(store, cut.Config{MaxTxs: 2, Timeout: time.Hour}))
		if err != nil {
			t.Fatal(err)
		}
		ids := submitAll(t, n, o, keys...)
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	ids := run("a", "b", "c")           // blocks 0 [a b], 1 [c] (on Close)
	ids = append(ids, run("d", "e")...) // block 2 [d e]
	ids = append(ids, run("f")...)      // block 3 [f]
	store := openStore(t, dir)
	defer store.Close()
	o, err := New(n.config(store, slow))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if o.Height() != 4 {
		t.Fatalf("Height after restarts %d, want 4", o.Height())
	}
	blks := blocks(t, o, 0, 4)
	checkChain(t, n.reg, nil, blks)
	if got := txIDs(t, blks); !slices.Equal(got, ids) {
		t.Errorf("tx ids %v, want %v", got, ids)
	}
}

// TestOverloadedBytes: the queue is bounded in bytes as well as in
// transactions. Before Config.QueueBytes, 10,000 admitted transactions of
// api.MaxTxBytes (40 GiB) could wait; here the second 2 MiB transaction
// overflows a 4 MiB queue, and the refusal names its size, what waits and
// the limit.
func TestOverloadedBytes(t *testing.T) {
	n := newTestNet(t)
	store := openStore(t, t.TempDir())
	defer store.Close()
	cfg := n.config(store, slow)
	cfg.QueueBytes = api.MaxTxBytes
	o, err := newOrderer(cfg) // not started: nothing drains the queue
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("k", 1<<20) // in the args, the write's key and its value: about 2 MiB
	first, _ := n.tx(t, big+"1")
	if err := o.Submit(context.Background(), first); err != nil {
		t.Fatalf("a %d-byte transaction into an empty 4 MiB queue: %v", len(first), err)
	}
	second, id := n.tx(t, big+"2")
	err = o.Submit(context.Background(), second)
	want := fmt.Sprintf("tx %s of %d bytes refused, %d bytes of admitted transactions are waiting and the limit is %d (Config.QueueBytes)",
		id, len(second), len(first), api.MaxTxBytes)
	if !errors.Is(err, ErrOverloaded) || StatusOf(err) != 429 || !strings.Contains(err.Error(), want) {
		t.Errorf("Submit to a queue full of bytes: %v, want ErrOverloaded (429) saying %q", err, want)
	}
	if got := o.Metrics().QueuedBytes; got != int64(len(first)) {
		t.Errorf("QueuedBytes %d, want %d", got, len(first))
	}
	o.start()
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if got := o.Metrics().QueuedBytes; got != 0 {
		t.Errorf("QueuedBytes %d after the queue drained, want 0", got)
	}
}

func TestOverloaded(t *testing.T) {
	n := newTestNet(t)
	store := openStore(t, t.TempDir())
	defer store.Close()
	cfg := n.config(store, slow)
	cfg.Queue = 2
	o, err := newOrderer(cfg) // not started: nothing drains the queue
	if err != nil {
		t.Fatal(err)
	}
	ids := submitAll(t, n, o, "a", "b")
	raw, _ := n.tx(t, "c")
	err = o.Submit(context.Background(), raw)
	if !errors.Is(err, ErrOverloaded) || StatusOf(err) != 429 || !strings.Contains(err.Error(), "2 admitted transactions are waiting") {
		t.Errorf("Submit to a full queue: %v, want ErrOverloaded (429)", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := o.Submit(ctx, raw); !errors.Is(err, context.Canceled) {
		t.Errorf("Submit with a cancelled context: %v, want context.Canceled", err)
	}
	o.start()
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if got := txIDs(t, blocks(t, o, 0, 1)); !slices.Equal(got, ids) {
		t.Errorf("stored %v, want %v", got, ids)
	}
	if m := o.Metrics(); m.Refused.Overloaded != 1 || m.Refused.Context != 1 {
		t.Errorf("metrics: %v", m)
	}
}

func TestStoreFailureIsSticky(t *testing.T) {
	n := newTestNet(t)
	store := openStore(t, t.TempDir())
	o, err := New(n.config(store, cut.Config{MaxTxs: 1, Timeout: time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	store.Close() // every Append now fails
	raw, _ := n.tx(t, "a")
	if err := o.Submit(context.Background(), raw); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		raw, _ := n.tx(t, "b")
		err := o.Submit(context.Background(), raw)
		if errors.Is(err, ErrFailed) {
			if !errors.Is(err, ledger.ErrClosed) || StatusOf(err) != 503 {
				t.Errorf("Submit after the failure: %v, want ErrFailed wrapping ledger.ErrClosed (503)", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Submit still returns %v 10s after the store closed", err)
		}
		time.Sleep(time.Millisecond)
	}
	if err := o.Close(); !errors.Is(err, ErrFailed) {
		t.Errorf("Close: %v, want ErrFailed", err)
	}
}

func TestMetricsString(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, cut.Config{MaxTxs: 2, Timeout: time.Hour})
	submitAll(t, n, o, keys("m", 4)...)
	blocks(t, o, 0, 2)
	m := o.Metrics()
	if m.Blocks != 2 || m.Txs != 4 || m.AvgBlockTxs() != 2 || m.Appends == 0 || m.Appends > 2 || m.Fsyncs == 0 || m.Height != 2 {
		t.Errorf("metrics: %+v", m)
	}
	s := m.String()
	for _, want := range []string{"submitted 4, admitted 4, refused 0", "2 blocks of 4 txs (avg 2.0 txs"} {
		if !strings.Contains(s, want) {
			t.Errorf("Metrics.String() = %q, want it to contain %q", s, want)
		}
	}
}
