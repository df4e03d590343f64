package committer

import (
	"encoding/binary"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
	"github.com/strand-ledger/strand/policy"
)

const (
	testChannel  = "ch1"
	testContract = "kv"
)

// testNet is a channel with two peer orgs and an orderer org, the signers
// the tests need, and a chain cursor for building blocks.
type testNet struct {
	t                                  testing.TB
	ch                                 Channel
	client1, client2, peer1, peer2     *identity.Signer
	peer1b, orderer, foreignClient1    *identity.Signer
	ordererAdmin, org1Admin, org2Admin *identity.Signer
	unknownOrgClient                   *identity.Signer
	caCerts                            map[string][]byte
	cas                                map[string]*identity.CA
	prevHash                           []byte
	next                               uint64
	nonce                              uint64
}

func newTestNet(t testing.TB) *testNet {
	t.Helper()
	return newTestNetAlg(t, identity.ECDSAP256)
}

// newTestNetAlg is newTestNet with CAs and members of alg, except client2
// and org2Admin, which sign with Ed25519 whatever alg is (a mixed channel
// under ECDSA P-256).
func newTestNetAlg(t testing.TB, alg identity.Algorithm) *testNet {
	t.Helper()
	must := func(s *identity.Signer, err error) *identity.Signer {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ca := func(org string) *identity.CA {
		t.Helper()
		c, err := identity.NewCA(org, alg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	org1, org2, ord, foreign, unknown := ca("Org1"), ca("Org2"), ca("OrdererOrg"), ca("Org1"), ca("Org9")
	reg, err := identity.NewRegistry([]identity.Org{
		{ID: "Org1", CACerts: [][]byte{org1.CertDER()}},
		{ID: "Org2", CACerts: [][]byte{org2.CertDER()}},
		{ID: "OrdererOrg", CACerts: [][]byte{ord.CertDER()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := &testNet{t: t,
		client1:          must(org1.Issue("client1", identity.RoleClient, alg)),
		client2:          must(org2.Issue("client2", identity.RoleClient, identity.Ed25519)),
		peer1:            must(org1.Issue("peer1", identity.RolePeer, alg)),
		peer1b:           must(org1.Issue("peer1b", identity.RolePeer, alg)),
		peer2:            must(org2.Issue("peer2", identity.RolePeer, alg)),
		orderer:          must(ord.Issue("orderer0", identity.RoleOrderer, alg)),
		ordererAdmin:     must(ord.Issue("admin0", identity.RoleAdmin, alg)),
		org1Admin:        must(org1.Issue("admin1", identity.RoleAdmin, alg)),
		org2Admin:        must(org2.Issue("admin2", identity.RoleAdmin, identity.Ed25519)),
		foreignClient1:   must(foreign.Issue("mallory", identity.RoleClient, alg)),
		unknownOrgClient: must(unknown.Issue("eve", identity.RoleClient, alg)),
	}
	n.caCerts = map[string][]byte{"Org1": org1.CertDER(), "Org2": org2.CertDER(), "OrdererOrg": ord.CertDER()}
	n.cas = map[string]*identity.CA{"Org1": org1, "Org2": org2, "OrdererOrg": ord}
	n.ch = Channel{
		Name: testChannel, Registry: reg, OrdererOrgs: []string{"OrdererOrg"},
		Policies: map[string]*policy.Policy{
			testContract: policy.MustParse("AND('Org1.peer','Org2.peer')"),
			"other":      policy.MustParse("OR('Org1.peer','Org2.peer')"),
		},
	}
	return n
}

func (n *testNet) caCert(org string) []byte { return n.caCerts[org] }

func (n *testNet) nextNonce() []byte {
	n.nonce++
	return binary.BigEndian.AppendUint64([]byte("nonce-"), n.nonce)
}

// tx builds a transaction of the kv contract with the given rwset, signed
// by client1 and endorsed by peer1 and peer2.
func (n *testNet) tx(rw *api.RWSet) []byte {
	return n.txBy(rw, n.client1, n.peer1, n.peer2)
}

func (n *testNet) txBy(rw *api.RWSet, creator *identity.Signer, endorsers ...*identity.Signer) []byte {
	n.t.Helper()
	es := make([]api.Signer, len(endorsers))
	for i, e := range endorsers {
		es[i] = e
	}
	raw, _, err := api.BuildTx(api.TxSpec{
		Channel: testChannel, Contract: testContract, Function: "f", Nonce: n.nextNonce(), RWSet: rw,
	}, creator, es)
	if err != nil {
		n.t.Fatal(err)
	}
	return raw
}

// block builds the next block of the chain over txs, signed by the orderer.
func (n *testNet) block(txs ...[]byte) []byte {
	n.t.Helper()
	return n.blockSignedBy(n.orderer, txs...)
}

func (n *testNet) blockSignedBy(s api.Signer, txs ...[]byte) []byte {
	n.t.Helper()
	b, err := api.BuildBlock(n.next, n.prevHash, txs, s)
	if err != nil {
		n.t.Fatal(err)
	}
	n.next++
	n.prevHash = api.HeaderHash(b.Header)
	return mustMarshal(n.t, b)
}

func rwset(ns string, reads []*api.KVRead, writes ...*api.KVWrite) *api.RWSet {
	return &api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: ns, Reads: reads, Writes: writes}}}
}

func rd(key string, v *api.Version) *api.KVRead { return &api.KVRead{Key: key, Version: v} }
func wr(key, val string) *api.KVWrite           { return &api.KVWrite{Key: key, Value: []byte(val)} }
func del(key string) *api.KVWrite               { return &api.KVWrite{Key: key, IsDelete: true} }
func ver(b uint64, t uint32) *api.Version       { return &api.Version{Block: b, Tx: t} }
func reads(rs ...*api.KVRead) []*api.KVRead     { return rs }

// peer is a committer over a real block store and Pebble state in dir.
type peer struct {
	*Committer
	store *ledger.BlockStore
	db    statedb.DB
}

func openPeer(t testing.TB, n *testNet, dir string, opts Options) *peer {
	t.Helper()
	return openPeerOn(t, n, dir, opts, "pebble")
}

// openPeerOn is openPeer with the named state database backend.
func openPeerOn(t testing.TB, n *testNet, dir string, opts Options, stateDB string) *peer {
	t.Helper()
	store, err := ledger.OpenBlockStore(filepath.Join(dir, "blocks"), ledger.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	db, err := openStateDB(filepath.Join(dir, "state"), stateDB)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(n.ch, store, db, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{Committer: c, store: store, db: db}
	t.Cleanup(p.close)
	return p
}

// openStateDB opens the named backend; memory-checkpoint checkpoints
// every 16 blocks, so that tests see both checkpoints and replays.
func openStateDB(dir, name string) (statedb.DB, error) {
	var o backend.Options
	o.Checkpoint.EveryBlocks = 16
	return backend.Open(name, dir, o)
}

func (p *peer) close() {
	if p.Committer != nil {
		p.Committer.Close()
		p.store.Close()
		p.db.Close()
		p.Committer = nil
	}
}

// dumpState returns every key of the namespaces with value and version.
func dumpState(t testing.TB, db statedb.DB, namespaces ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ns := range namespaces {
		err := db.Scan(ns, "", "", func(k string, v statedb.Value) bool {
			out[ns+"/"+k] = string(v.Data) + "@" + v.Version.String()
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// reopenRaw opens a peer directory's block store and state without a
// committer.
func reopenRaw(t testing.TB, dir string) (*ledger.BlockStore, statedb.DB) {
	t.Helper()
	store, err := ledger.OpenBlockStore(filepath.Join(dir, "blocks"), ledger.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	db, err := openStateDB(filepath.Join(dir, "state"), "pebble")
	if err != nil {
		t.Fatal(err)
	}
	return store, db
}

// sameAsReplay fails t unless store and db hold every one of blocks, with
// the codes a fresh sequential replay of them gives, and that replay's
// state; what names the store's history in the messages.
func sameAsReplay(t *testing.T, n *testNet, store *ledger.BlockStore, db statedb.DB, blocks [][]byte, what string) {
	t.Helper()
	ref := openPeer(t, n, t.TempDir(), Options{Mode: Sequential})
	for _, b := range blocks {
		if err := ref.Deliver(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := ref.Sync(); err != nil {
		t.Fatal(err)
	}
	if store.Height() != uint64(len(blocks)) {
		t.Fatalf("%s: height %d, want %d", what, store.Height(), len(blocks))
	}
	if err := store.VerifyChain(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for i := range blocks {
		got, err := store.Block(uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.store.Block(uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Metadata.ValidationCodes, want.Metadata.ValidationCodes) {
			t.Fatalf("%s: block %d: codes %v, a fresh replay's %v", what, i, got.Metadata.ValidationCodes, want.Metadata.ValidationCodes)
		}
	}
	if got, want := dumpState(t, db, testContract), dumpState(t, ref.db, testContract); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: state differs from a fresh replay's:\n got %v\nwant %v", what, got, want)
	}
}
