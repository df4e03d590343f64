package committer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
)

// TestValidationCodes delivers one block with a transaction for every
// validation outcome and checks each code, the stored codes, the tx index
// and the resulting state, in both modes.
func TestValidationCodes(t *testing.T) {
	// Reparse (a peer without a block cache) must decide the same codes.
	// Under Ed25519 the committer checks each worker's share of a block
	// as one batch (Options.VerifyBatch's default) and must decide the
	// same codes.
	for _, alg := range []identity.Algorithm{identity.ECDSAP256, identity.Ed25519} {
		for _, opts := range []Options{{Mode: Sequential}, {Mode: Parallel}, {Mode: Sequential, Reparse: true}, {Mode: Parallel, Reparse: true}} {
			testValidationCodes(t, alg, opts, false, "")
		}
		// A peer that endorsed (peer1, remembering its signatures) skips
		// checking its own endorsements and must decide the same codes.
		testValidationCodes(t, alg, Options{Mode: Parallel}, true, "")
		testValidationCodes(t, alg, Options{Mode: Sequential}, true, "")
		// Stage 1 with a compute node checking signatures (remote.go):
		// an honest one, one that calls every signature invalid, one that
		// fails, one that answers too few verdicts; the same codes.
		for _, remote := range []string{"honest", "liar", "failing", "short"} {
			testValidationCodes(t, alg, Options{Mode: Parallel, VerifyWorkers: 1}, false, remote)
		}
	}
}

// fakeRemote is a compute node for stage 1 (Remote): honest checks with
// CheckSignatures; liar calls every signature checked and invalid;
// failing errs; short answers one verdict too few.
type fakeRemote struct {
	kind  string
	reg   *identity.Registry
	calls atomic.Int64
}

func (f *fakeRemote) CheckSignatures(_ context.Context, txs [][]byte) ([]Verdict, error) {
	f.calls.Add(1)
	switch f.kind {
	case "honest":
		return CheckSignatures(f.reg, testChannel, txs)
	case "liar":
		vs := make([]Verdict, len(txs))
		for i := range vs {
			vs[i].Checked = ^uint64(0)
		}
		return vs, nil
	case "short":
		return make([]Verdict, len(txs)-1), nil
	}
	return nil, errors.New("fake remote: unavailable")
}

func testValidationCodes(t *testing.T, alg identity.Algorithm, opts Options, own bool, remote string) {
	name := alg.String() + "-" + opts.Mode.String()
	if opts.Reparse {
		name += "-reparse"
	}
	if own {
		name += "-own"
	}
	if remote != "" {
		name += "-remote-" + remote
	}
	t.Run(name, func(t *testing.T) {
		n := newTestNetAlg(t, alg)
		if own {
			n.peer1.Remember(64)
			n.ch.Own = n.peer1
		}
		p := openPeer(t, n, t.TempDir(), opts)
		var fake *fakeRemote
		if remote != "" {
			// Its workers wait on the job queue before any block comes,
			// so they are served first.
			fake = &fakeRemote{kind: remote, reg: n.ch.Registry}
			defer p.AddRemote("compute0", fake)()
		}
		sub := p.Subscribe(16)

		setup := n.tx(rwset(testContract, nil, wr("a", "1"), wr("b", "1")))
		deliver(t, p, n.block(setup))

		first := n.tx(rwset(testContract, reads(rd("b", ver(0, 0))), wr("c", "3")))
		tamperedSig := n.tx(rwset(testContract, nil, wr("x", "1")))
		tamperedSig = retag(t, tamperedSig, func(tx *api.Transaction) { tx.Signature[len(tx.Signature)-3] ^= 1 })
		wrongChannel := n.txWith(api.TxSpec{Channel: "ch2", Contract: testContract, RWSet: rwset(testContract, nil, wr("x", "1"))})
		unknownContract := n.txWith(api.TxSpec{Channel: testChannel, Contract: "nope", RWSet: rwset("nope", nil, wr("x", "1"))})
		badEndorsement := n.tx(rwset(testContract, nil, wr("x", "1")))
		badEndorsement = retagPayload(t, badEndorsement, n, func(p *api.TxPayload) { p.Endorsements[1].Signature[5] ^= 1 })
		badOwnEndorsement := n.tx(rwset(testContract, nil, wr("x", "1"))) // peer1's own, remembered when own
		badOwnEndorsement = retagPayload(t, badOwnEndorsement, n, func(p *api.TxPayload) { p.Endorsements[0].Signature[5] ^= 1 })
		// peer1's remembered signature over another response payload.
		swapped1, swapped2 := n.tx(rwset(testContract, nil, wr("s", "1"))), n.tx(rwset(testContract, nil, wr("s", "2")))
		sig1 := decodePayload(t, swapped1).Endorsements[0].Signature
		swappedOwn := retagPayload(t, swapped2, n, func(p *api.TxPayload) { p.Endorsements[0].Signature = sig1 })
		badTxID := n.tx(rwset(testContract, nil, wr("x", "1")))
		badTxID = retagPayload(t, badTxID, n, func(p *api.TxPayload) { p.Header.TxId = strings.Repeat("0", 64) })

		cases := []struct {
			name string
			raw  []byte
			want api.TxValidationCode
		}{
			{"valid read b, insert c", first, api.TxValidationCode_VALID},
			{"range sees c inserted by tx 0", n.tx(&api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: testContract,
				RangeReads: []*api.RangeRead{{StartKey: "a", EndKey: "z", Exhausted: true,
					Reads: reads(rd("a", ver(0, 0)), rd("b", ver(0, 0)))}}}}}), api.TxValidationCode_PHANTOM_READ_CONFLICT},
			{"valid update a", n.tx(rwset(testContract, reads(rd("a", ver(0, 0))), wr("a", "2"))), api.TxValidationCode_VALID},
			{"stale read of a", n.tx(rwset(testContract, reads(rd("a", ver(0, 0))), wr("y", "1"))), api.TxValidationCode_MVCC_READ_CONFLICT},
			{"read of absent key", n.tx(rwset(testContract, reads(rd("zz", nil)))), api.TxValidationCode_VALID},
			{"tampered creator signature", tamperedSig, api.TxValidationCode_BAD_CREATOR_SIGNATURE},
			{"creator cert from a foreign CA", n.txBy(rwset(testContract, nil, wr("x", "1")), n.foreignClient1, n.peer1, n.peer2), api.TxValidationCode_BAD_CREATOR_SIGNATURE},
			{"creator of an unknown org", n.txBy(rwset(testContract, nil, wr("x", "1")), n.unknownOrgClient, n.peer1, n.peer2), api.TxValidationCode_BAD_CREATOR_SIGNATURE},
			{"creator with peer role", n.txBy(rwset(testContract, nil, wr("x", "1")), n.peer1, n.peer1, n.peer2), api.TxValidationCode_BAD_CREATOR_SIGNATURE},
			{"ed25519 creator of Org2", n.txBy(rwset(testContract, nil, wr("e", "1")), n.client2, n.peer2, n.peer1), api.TxValidationCode_VALID},
			{"one endorsement", n.txBy(rwset(testContract, nil, wr("x", "1")), n.client1, n.peer1), api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE},
			{"bad endorsement signature", badEndorsement, api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE},
			{"bad own endorsement signature", badOwnEndorsement, api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE},
			{"own signature of another response", swappedOwn, api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE},
			{"two Org1 peers", n.txBy(rwset(testContract, nil, wr("x", "1")), n.client1, n.peer1, n.peer1b), api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE},
			{"same endorser twice", n.txBy(rwset(testContract, nil, wr("x", "1")), n.client1, n.peer1, n.peer1), api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE},
			{"duplicate in block", first, api.TxValidationCode_DUPLICATE_TXID},
			{"duplicate of block 0", setup, api.TxValidationCode_DUPLICATE_TXID},
			{"write to another namespace", n.tx(&api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: "other", Writes: []*api.KVWrite{wr("x", "1")}}}}), api.TxValidationCode_ILLEGAL_WRITESET},
			{"garbage bytes", []byte("\xff\xff\xff garbage"), api.TxValidationCode_BAD_PAYLOAD},
			{"empty envelope", nil, api.TxValidationCode_NIL_ENVELOPE},
			{"wrong channel", wrongChannel, api.TxValidationCode_TARGET_CHAIN_NOT_FOUND},
			{"unknown contract", unknownContract, api.TxValidationCode_INVALID_CHAINCODE},
			{"tx id not derived from nonce", badTxID, api.TxValidationCode_BAD_PROPOSAL_TXID},
			{"blind delete of b", n.tx(rwset(testContract, nil, del("b"))), api.TxValidationCode_VALID},
		}
		var txs [][]byte
		for _, c := range cases {
			txs = append(txs, c.raw)
		}
		deliver(t, p, n.block(txs...))
		ev0, ev1 := <-sub.C, <-sub.C
		if ev0.Number != 0 || ev1.Number != 1 {
			t.Fatalf("events for blocks %d, %d; want 0, 1", ev0.Number, ev1.Number)
		}
		stored, err := p.store.Block(1)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range cases {
			if got := api.TxValidationCode(ev1.Codes[i]); got != c.want {
				t.Errorf("tx %d (%s): code %v, want %v", i, c.name, got, c.want)
			}
			if got := api.TxValidationCode(stored.Metadata.ValidationCodes[i]); got != c.want {
				t.Errorf("tx %d (%s): stored code %v, want %v", i, c.name, got, c.want)
			}
		}
		want := map[string]string{"kv/a": "2@1:2", "kv/c": "3@1:0", "kv/e": "1@1:9"}
		if got := dumpState(t, p.db, testContract, "other"); !equalMaps(got, want) {
			t.Errorf("state %v, want %v", got, want)
		}
		// A signed transaction that failed MVCC still used its tx id.
		loc, ok, err := p.store.TxLocation(txID(t, cases[3].raw))
		if err != nil || !ok || loc.Block != 1 || loc.Tx != 3 || loc.Code != api.TxValidationCode_MVCC_READ_CONFLICT {
			t.Errorf("TxLocation of the stale read = %+v, %v, %v", loc, ok, err)
		}
		deliver(t, p, n.block(cases[3].raw))
		if ev := <-sub.C; api.TxValidationCode(ev.Codes[0]) != api.TxValidationCode_DUPLICATE_TXID {
			t.Errorf("resubmitted tx id: code %v, want DUPLICATE_TXID", api.TxValidationCode(ev.Codes[0]))
		}
		// An unsigned transaction did not burn its tx id.
		if _, ok, _ := p.store.TxLocation(txID(t, tamperedSig)); ok {
			t.Errorf("a transaction with a bad creator signature was indexed by tx id")
		}
		if m := p.Metrics(); m.Height != 3 || m.Txs != uint64(len(cases)+2) {
			t.Errorf("metrics: %v", m)
		}
		if m := n.peer1.MadeMetrics(); own != (m.Recognized > 0) {
			t.Errorf("own endorsements recognised: %+v (own %v)", m, own)
		}
		if fake != nil {
			m := p.Metrics()
			ok := m.Remotes == 1 && fake.calls.Load() > 0
			switch remote {
			case "honest", "liar":
				ok = ok && m.RemoteTxs > 0 && m.RemoteFailed == 0
			default:
				ok = ok && m.RemoteTxs == 0 && m.RemoteFailed > 0
			}
			if !ok {
				t.Errorf("remote %s asked %d times; metrics: %d remotes, %d transactions checked there, %d requests failed", remote, fake.calls.Load(), m.Remotes, m.RemoteTxs, m.RemoteFailed)
			}
		}
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func deliver(t testing.TB, p *peer, raw []byte) {
	t.Helper()
	if err := p.Deliver(raw); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
}

func (n *testNet) txWith(spec api.TxSpec) []byte {
	n.t.Helper()
	spec.Nonce = n.nextNonce()
	raw, _, err := api.BuildTx(spec, n.client1, []api.Signer{n.peer1, n.peer2})
	if err != nil {
		n.t.Fatal(err)
	}
	return raw
}

func txID(t testing.TB, raw []byte) string {
	t.Helper()
	tx := new(api.Transaction)
	p := new(api.TxPayload)
	if err := proto.Unmarshal(raw, tx); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(tx.Payload, p); err != nil {
		t.Fatal(err)
	}
	return p.Header.TxId
}

// retag decodes a transaction envelope, changes it, and re-encodes it.
func retag(t testing.TB, raw []byte, f func(*api.Transaction)) []byte {
	t.Helper()
	tx := new(api.Transaction)
	if err := proto.Unmarshal(raw, tx); err != nil {
		t.Fatal(err)
	}
	f(tx)
	return mustMarshal(t, tx)
}

// retagPayload changes a transaction's payload and re-signs it as client1,
// so that only the change itself is wrong.
func retagPayload(t testing.TB, raw []byte, n *testNet, f func(*api.TxPayload)) []byte {
	t.Helper()
	tx := new(api.Transaction)
	p := new(api.TxPayload)
	if err := proto.Unmarshal(raw, tx); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(tx.Payload, p); err != nil {
		t.Fatal(err)
	}
	f(p)
	out, _, err := api.SignTx(p, n.client1)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRefusedBlocks: a block that breaks the chain, or whose data hash or
// orderer signature is wrong, is refused whole; delivery resumes at it.
func TestRefusedBlocks(t *testing.T) {
	n := newTestNet(t)
	p := openPeer(t, n, t.TempDir(), Options{})
	deliver(t, p, n.block(n.tx(rwset(testContract, nil, wr("a", "1")))))

	// Broken chain: refused at once by Deliver.
	saved := n.prevHash
	n.prevHash = make([]byte, 32)
	err := p.Deliver(n.block(n.tx(rwset(testContract, nil, wr("a", "2")))))
	if !errors.Is(err, ErrBlockRefused) || !strings.Contains(err.Error(), "block 1") {
		t.Fatalf("broken chain: err %v, want ErrBlockRefused naming block 1", err)
	}
	n.prevHash, n.next = saved, 1

	refusals := []struct {
		name  string
		block func() []byte
		want  string
	}{
		{"tampered transaction", func() []byte {
			b := decodeBlock(t, n.block(n.tx(rwset(testContract, nil, wr("a", "2")))))
			b.Transactions[0] = append(b.Transactions[0], 0)
			return mustMarshal(t, b)
		}, "data hash"},
		{"unsigned", func() []byte { return n.blockSignedBy(nil, n.tx(rwset(testContract, nil, wr("a", "2")))) }, "no orderer signature"},
		{"signed by a client", func() []byte { return n.blockSignedBy(n.client1, n.tx(rwset(testContract, nil, wr("a", "2")))) }, "not an orderer org"},
		{"signed by an admin of the orderer org", func() []byte { return n.blockSignedBy(n.ordererAdmin, n.tx(rwset(testContract, nil, wr("a", "2")))) }, "want orderer"},
		{"wrong signature", func() []byte {
			b := decodeBlock(t, n.block(n.tx(rwset(testContract, nil, wr("a", "2")))))
			b.Metadata.Signature.Signature[4] ^= 1
			return mustMarshal(t, b)
		}, "orderer signature"},
	}
	for _, r := range refusals {
		raw := r.block()
		if err := p.Deliver(raw); err != nil {
			t.Fatalf("%s: Deliver: %v", r.name, err)
		}
		// A block delivered after the bad one is dropped with it.
		follow := n.block(n.tx(rwset(testContract, nil, wr("a", "3"))))
		_ = p.Deliver(follow)
		if err := p.Sync(); err != nil {
			t.Fatal(err)
		}
		err := p.Deliver(follow)
		if !errors.Is(err, ErrBlockRefused) || !strings.Contains(err.Error(), "block 1") || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s: after refusal Deliver = %v, want ErrBlockRefused naming block 1 and %q", r.name, err, r.want)
		}
		if p.Height() != 1 {
			t.Errorf("%s: height %d, want 1", r.name, p.Height())
		}
		n.prevHash, n.next = saved, 1
	}
	deliver(t, p, n.block(n.tx(rwset(testContract, reads(rd("a", ver(0, 0))), wr("a", "good")))))
	if got := dumpState(t, p.db, testContract); got["kv/a"] != "good@1:0" {
		t.Errorf("after resuming: state %v", got)
	}
	if m := p.Metrics(); m.Refused != uint64(len(refusals)) {
		t.Errorf("Refused = %d, want %d", m.Refused, len(refusals))
	}
	if err := p.store.VerifyChain(); err != nil {
		t.Error(err)
	}
}

func decodeBlock(t testing.TB, raw []byte) *api.Block {
	t.Helper()
	b := new(api.Block)
	if err := proto.Unmarshal(raw, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOutOfOrder: a block with the wrong number is refused by Deliver.
func TestOutOfOrder(t *testing.T) {
	n := newTestNet(t)
	p := openPeer(t, n, t.TempDir(), Options{})
	n.next = 5
	if err := p.Deliver(n.block()); !errors.Is(err, ErrOutOfOrder) || !strings.Contains(err.Error(), "want block 0") {
		t.Fatalf("Deliver = %v, want ErrOutOfOrder wanting block 0", err)
	}
	if err := p.Deliver([]byte("junk")); !errors.Is(err, ErrBlockRefused) {
		t.Fatalf("Deliver(junk) = %v, want ErrBlockRefused", err)
	}
}

// TestReopen: a committer reopened over the same directories continues
// the chain and keeps the tx index.
func TestReopen(t *testing.T) {
	n := newTestNet(t)
	dir := t.TempDir()
	p := openPeer(t, n, dir, Options{})
	first := n.tx(rwset(testContract, nil, wr("k", "v")))
	deliver(t, p, n.block(first))
	p.close()
	p = openPeer(t, n, dir, Options{})
	if p.Height() != 1 {
		t.Fatalf("height after reopen %d, want 1", p.Height())
	}
	sub := p.Subscribe(1)
	deliver(t, p, n.block(first))
	select {
	case ev := <-sub.C:
		if api.TxValidationCode(ev.Codes[0]) != api.TxValidationCode_DUPLICATE_TXID {
			t.Errorf("replayed tx after reopen: %v", api.TxValidationCode(ev.Codes[0]))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no commit event")
	}
}

// TestForgedCopyDoesNotBurnTxID: a copy of a transaction with a forged
// creator signature does not claim its tx id, before or after the block
// store's index is rebuilt from the blocks; the real one then commits.
func TestForgedCopyDoesNotBurnTxID(t *testing.T) {
	n := newTestNet(t)
	dir := t.TempDir()
	p := openPeer(t, n, dir, Options{})
	real := n.tx(rwset(testContract, nil, wr("a", "1")))
	forged := retag(t, real, func(tx *api.Transaction) { tx.Signature[len(tx.Signature)-2] ^= 1 })
	id := txID(t, real)
	deliver(t, p, n.block(forged))
	deliver(t, p, n.block(real))
	check := func(when string) {
		loc, ok, err := p.store.TxLocation(id)
		if err != nil || !ok || loc.Block != 1 || loc.Code != api.TxValidationCode_VALID {
			t.Fatalf("%s: TxLocation = %+v, %v, %v; want block 1, VALID", when, loc, ok, err)
		}
	}
	check("live index")
	p.close()
	if err := os.RemoveAll(filepath.Join(dir, "blocks", "index")); err != nil {
		t.Fatal(err)
	}
	p = openPeer(t, n, dir, Options{})
	check("rebuilt index")
}

// TestRelaxedAnnouncesBeforeFsync: in Relaxed a block is announced with no
// fsync of the block store, which flushLoop then syncs within the
// interval; Close leaves it durable.
func TestRelaxedAnnouncesBeforeFsync(t *testing.T) {
	n := newTestNet(t)
	dir := t.TempDir()
	store, err := ledger.OpenBlockStore(filepath.Join(dir, "blocks"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c, err := New(n.ch, store, memdb.New(), Options{Durability: Relaxed, FlushInterval: 200 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub := c.Subscribe(4)
	before := store.Stats().Fsyncs
	raw := n.block(n.tx(rwset(testContract, nil, wr("k", "v"))))
	if err := c.Deliver(raw); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.C:
	case <-time.After(10 * time.Second):
		t.Fatal("no commit event")
	}
	if got := store.Stats().Fsyncs - before; got != 0 {
		t.Errorf("%d fsyncs before the announcement, want 0 in Relaxed", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for store.Stats().Fsyncs == before {
		if time.Now().After(deadline) {
			t.Fatal("the block store was never synced")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseDurability("fast"); err == nil {
		t.Error("ParseDurability accepted \"fast\"")
	}
	bad := Options{Durability: Relaxed, FlushInterval: time.Hour}
	bad.EnsureDefaults()
	if err := bad.Validate(); err == nil {
		t.Error("FlushInterval of an hour accepted")
	}
}

// TestCheckpointChannel: on a channel whose orderers sign only
// checkpoints, unsigned blocks commit (the orderer's TLS stream vouches for
// them) and Metrics.Signed stays at the newest signed block; a block that
// does carry a signature must still verify. On an ordinary channel the
// same unsigned block is refused (TestRefusedBlocks).
func TestCheckpointChannel(t *testing.T) {
	n := newTestNet(t)
	n.ch.Checkpoints = true
	p := openPeer(t, n, t.TempDir(), Options{})
	deliver(t, p, n.block(n.tx(rwset(testContract, nil, wr("a", "1")))))
	deliver(t, p, n.blockSignedBy(nil, n.tx(rwset(testContract, nil, wr("b", "1")))))
	deliver(t, p, n.blockSignedBy(nil, n.tx(rwset(testContract, nil, wr("c", "1")))))
	if got := dumpState(t, p.db, testContract); got["kv/b"] != "1@1:0" || got["kv/c"] != "1@2:0" {
		t.Fatalf("unsigned blocks on a checkpoint channel: state %v", got)
	}
	if m := p.Metrics(); m.Height != 3 || m.Signed != 1 {
		t.Errorf("height %d, signed up to %d; want 3 and 1 (only block 0 is signed)", m.Height, m.Signed)
	}
	deliver(t, p, n.block(n.tx(rwset(testContract, nil, wr("d", "1")))))
	if m := p.Metrics(); m.Signed != 4 {
		t.Errorf("after a checkpoint at block 3: signed up to %d, want 4", m.Signed)
	}

	b := decodeBlock(t, n.block(n.tx(rwset(testContract, nil, wr("e", "1")))))
	b.Metadata.Signature.Signature[4] ^= 1
	if err := p.Deliver(mustMarshal(t, b)); err != nil {
		t.Fatal(err)
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	err := p.Deliver(n.blockSignedBy(nil))
	if !errors.Is(err, ErrBlockRefused) || !strings.Contains(err.Error(), "block 4 orderer signature") {
		t.Errorf("a checkpoint with a bad signature: %v, want ErrBlockRefused naming block 4's signature", err)
	}
}
