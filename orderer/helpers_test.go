package orderer

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/orderer/cut"
)

const (
	testChannel  = "ch1"
	testContract = "kv"
)

// testNet is a channel with two client orgs and an orderer org, and
// members of every role, plus identities the channel does not trust.
type testNet struct {
	reg                             *identity.Registry
	client1, client2, admin1        *identity.Signer
	peer1, peer2                    *identity.Signer
	orderer                         *identity.Signer
	foreignClient, unknownOrgClient *identity.Signer
	nonce                           atomic.Uint64
	// CAs, to issue more identities (Raft cluster tests).
	org1CA, org2CA, ordererCA *identity.CA
}

func newTestNet(t testing.TB) *testNet {
	t.Helper()
	ca := func(org string) *identity.CA {
		t.Helper()
		c, err := identity.NewCA(org, identity.ECDSAP256)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	issue := func(ca *identity.CA, name string, role identity.Role, alg identity.Algorithm) *identity.Signer {
		t.Helper()
		s, err := ca.Issue(name, role, alg)
		if err != nil {
			t.Fatal(err)
		}
		return s
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
	return &testNet{
		reg:              reg,
		client1:          issue(org1, "client1", identity.RoleClient, identity.ECDSAP256),
		client2:          issue(org2, "client2", identity.RoleClient, identity.Ed25519),
		admin1:           issue(org1, "admin1", identity.RoleAdmin, identity.ECDSAP256),
		peer1:            issue(org1, "peer1", identity.RolePeer, identity.ECDSAP256),
		peer2:            issue(org2, "peer2", identity.RolePeer, identity.ECDSAP256),
		orderer:          issue(ord, "orderer0", identity.RoleOrderer, identity.ECDSAP256),
		foreignClient:    issue(foreign, "mallory", identity.RoleClient, identity.ECDSAP256),
		unknownOrgClient: issue(unknown, "eve", identity.RoleClient, identity.ECDSAP256),
		org1CA:           org1,
		org2CA:           org2,
		ordererCA:        ord,
	}
}

// txFor builds a transaction on channel ch by creator that writes key,
// endorsed by peer1 and peer2.
func (n *testNet) txFor(t testing.TB, ch string, creator *identity.Signer, key string) ([]byte, string) {
	t.Helper()
	nonce := binary.BigEndian.AppendUint64([]byte("nonce-"), n.nonce.Add(1))
	raw, id, err := api.BuildTx(api.TxSpec{
		Channel: ch, Contract: testContract, Function: "put", Args: [][]byte{[]byte(key)}, Nonce: nonce,
		RWSet: &api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: testContract,
			Writes: []*api.KVWrite{{Key: key, Value: []byte("v-" + key)}}}}},
	}, creator, []api.Signer{n.peer1, n.peer2})
	if err != nil {
		t.Fatal(err)
	}
	return raw, id
}

func (n *testNet) tx(t testing.TB, key string) ([]byte, string) {
	return n.txFor(t, testChannel, n.client1, key)
}

func openStore(t testing.TB, dir string) *ledger.BlockStore {
	t.Helper()
	s, err := ledger.OpenBlockStore(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (n *testNet) config(store *ledger.BlockStore, batch cut.Config) Config {
	return Config{Channel: testChannel, Registry: n.reg, Signer: n.orderer, Batch: batch, Store: store}
}

// start runs an orderer over a fresh store in a temp dir; both are closed
// at the end of the test.
func (n *testNet) start(t testing.TB, batch cut.Config) *Orderer {
	t.Helper()
	store := openStore(t, t.TempDir())
	o, err := New(n.config(store, batch))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		store.Close()
	})
	return o
}

// blocks delivers blocks [start, start+count) within 10 s.
func blocks(t testing.TB, o *Orderer, start uint64, count int) []*api.Block {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*api.Block
	errDone := bytes.ErrTooLarge // any sentinel: stops Deliver when we have enough
	err := o.Deliver(ctx, start, true, func(raw []byte) error {
		b, err := api.DecodeBlock(raw)
		if err != nil {
			t.Fatalf("delivered block %d does not decode: %v", start+uint64(len(out)), err)
		}
		out = append(out, b)
		if len(out) == count {
			return errDone
		}
		return nil
	})
	if len(out) != count {
		t.Fatalf("delivered %d blocks from %d, want %d (Deliver: %v)", len(out), start, count, err)
	}
	return out
}

// checkChain checks what a peer checks: numbers from first's, each block
// linked to prev, data hash, and an orderer signature the registry accepts.
func checkChain(t testing.TB, reg *identity.Registry, prev []byte, blks []*api.Block) []byte {
	t.Helper()
	for i, b := range blks {
		h := b.GetHeader()
		if i > 0 && h.Number != blks[i-1].Header.Number+1 {
			t.Fatalf("block %d follows block %d", h.Number, blks[i-1].Header.Number)
		}
		if !bytes.Equal(h.PreviousHash, prev) {
			t.Fatalf("block %d previous hash %x, want %x", h.Number, h.PreviousHash, prev)
		}
		if !bytes.Equal(h.DataHash, api.DataHash(b.Transactions)) {
			t.Fatalf("block %d data hash does not match its transactions", h.Number)
		}
		sig := b.GetMetadata().GetSignature()
		m, err := reg.Member(sig.GetSigner())
		if err != nil || m.Role != identity.RoleOrderer {
			t.Fatalf("block %d signer: %v (member %+v)", h.Number, err, m)
		}
		prev = api.HeaderHash(h)
		if err := m.Verify(prev, sig.Signature); err != nil {
			t.Fatalf("block %d signature: %v", h.Number, err)
		}
		codes := b.GetMetadata().GetValidationCodes()
		if len(codes) != len(b.Transactions) || len(codes) > 0 && codes[0] != byte(api.TxValidationCode_NOT_VALIDATED) {
			t.Fatalf("block %d: validation codes %v, want NOT_VALIDATED for each of %d txs", h.Number, codes, len(b.Transactions))
		}
	}
	return prev
}

func txIDs(t testing.TB, blks []*api.Block) []string {
	t.Helper()
	var ids []string
	for _, b := range blks {
		for _, raw := range b.Transactions {
			tx, _, err := api.DecodeTx(raw)
			if err != nil {
				t.Fatalf("block %d holds an undecodable tx: %v", b.Header.Number, err)
			}
			ids = append(ids, tx.ID())
		}
	}
	return ids
}
