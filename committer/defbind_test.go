package committer

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/policy"
)

// boundTx is a transaction of contract cc writing key, simulated under
// the definition of cc committed at at (lifecycle.Bind, as the endorser
// builds it), endorsed by endorsers.
func (n *testNet) boundTx(cc, key string, at *api.Version, endorsers ...*identity.Signer) []byte {
	n.t.Helper()
	es := make([]api.Signer, len(endorsers))
	for i, e := range endorsers {
		es[i] = e
	}
	rw := rwset(cc, nil, wr(key, "v"))
	lifecycle.Bind(rw, cc, at)
	raw, _, err := api.BuildTx(api.TxSpec{Channel: testChannel, Contract: cc, Function: "f", Nonce: n.nextNonce(), RWSet: rw}, n.client1, es)
	if err != nil {
		n.t.Fatal(err)
	}
	return raw
}

// TestEndorsementBoundToDefinition: a transaction reads the definition it
// was simulated under, so one simulated before an upgrade (or a first
// definition of a genesis contract) and ordered after it is
// MVCC_READ_CONFLICT, in the block after the definition's and in its own
// block after it; one simulated under the definition in force is VALID.
// The read of the lifecycle namespace demands no lifecycle policy: the
// transactions below carry one peer's endorsement, never admins'.
func TestEndorsementBoundToDefinition(t *testing.T) {
	for _, opts := range []Options{{Mode: Sequential}, {Mode: Parallel}} {
		t.Run(opts.Mode.String(), func(t *testing.T) {
			n := newTestNet(t)
			n.ch.Lifecycle = policy.MustParse("OutOf(2, 'Org1.admin', 'Org2.admin')")
			p := openPeer(t, n, t.TempDir(), opts)
			sub := p.Subscribe(16)
			check := func(what string, want ...api.TxValidationCode) uint64 {
				t.Helper()
				ev := <-sub.C
				if len(ev.Codes) != len(want) {
					t.Fatalf("%s: block %d has %d codes, want %d", what, ev.Number, len(ev.Codes), len(want))
				}
				for i, w := range want {
					if got := api.TxValidationCode(ev.Codes[i]); got != w {
						t.Errorf("%s: block %d tx %d: code %v, want %v", what, ev.Number, i, got, w)
					}
				}
				return ev.Number
			}
			at := func(name string) *api.Version {
				t.Helper()
				e, ok := p.Definitions().Get(name)
				if !ok {
					t.Fatalf("contract %q is not defined", name)
				}
				if e.Def == nil {
					return nil
				}
				if e.Def.At == nil {
					t.Fatalf("definition of %q at sequence %d has no version", name, e.Sequence)
				}
				return e.Def.At
			}
			a1, a2, p1 := n.org1Admin, n.org2Admin, n.peer1
			const valid, conflict = api.TxValidationCode_VALID, api.TxValidationCode_MVCC_READ_CONFLICT

			deliver(t, p, n.block(n.defTx("cc2", 1, "OR('Org1.peer')", nil, a1, a2)))
			b1 := check("first definition", valid)
			v1 := at("cc2")
			if v1.Block != b1 || v1.Tx != 0 {
				t.Fatalf("cc2's definition is at block %d tx %d, want block %d tx 0 (the version of its record)", v1.Block, v1.Tx, b1)
			}
			// "other" is a genesis contract: no record, a read of nothing.
			deliver(t, p, n.block(n.boundTx("cc2", "k1", v1, p1), n.boundTx("other", "k1", at("other"), p1)))
			check("simulated under the definitions in force", valid, valid)

			old := n.boundTx("cc2", "k2", v1, p1)                    // endorsed now, ordered after the upgrade
			oldGenesis := n.boundTx("other", "k2", nil, p1, n.peer2) // satisfies the old policy and the new
			deliver(t, p, n.block(
				n.boundTx("cc2", "k3", v1, p1), // before the upgrade in its block
				n.defTx("cc2", 2, "OR('Org1.peer')", nil, a1, a2),
				n.boundTx("cc2", "k4", v1, p1), // after it
			))
			b3 := check("upgrade", valid, valid, conflict)
			v2 := at("cc2")
			if v2.Block != b3 || v2.Tx != 1 {
				t.Fatalf("cc2's upgrade is at block %d tx %d, want block %d tx 1", v2.Block, v2.Tx, b3)
			}
			deliver(t, p, n.block(old, n.boundTx("cc2", "k5", v2, p1)))
			check("the block after the upgrade", conflict, valid)

			deliver(t, p, n.block(n.defTx("other", 2, "OR('Org2.peer')", nil, a1, a2)))
			check("first definition of a genesis contract (its sequence 1 is the channel file's)", valid)
			deliver(t, p, n.block(oldGenesis, n.boundTx("other", "k6", at("other"), n.peer2)))
			check("after the genesis contract's first definition", conflict, valid)

			state := dumpState(t, p.db, "cc2", "other")
			for _, k := range []string{"cc2/k1", "cc2/k3", "cc2/k5", "other/k1", "other/k6"} {
				if state[k] == "" {
					t.Errorf("state lacks %s, written by a valid transaction (state: %v)", k, state)
				}
			}
			if len(state) != 5 {
				t.Errorf("state %v has %d keys, want only the 5 valid transactions' writes", state, len(state))
			}
		})
	}
}

// BenchmarkDefinitionRead measures what binding every transaction to its
// contract's definition (lifecycle.Bind) costs stage 2: blocks of 500
// transactions on Pebble, each reading 4 random keys of 100,000 and
// writing one, without and with the read of the definition record
// (present, the same hot key for every transaction). One op is one block.
func BenchmarkDefinitionRead(b *testing.B) {
	const keys, txsPerBlock, readsPerTx = 100_000, 500, 4
	db, err := openStateDB(b.TempDir(), "pebble")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	val := make([]byte, 100)
	const per = 2000
	for lo := 0; lo < keys; lo += per {
		var batch statedb.Batch
		for i := lo; i < lo+per; i++ {
			batch.Put("kv", fmt.Sprint("k", i), val, statedb.Version{Block: uint64(i % 7), Tx: uint32(i)})
		}
		if lo == 0 {
			batch.Put(lifecycle.Namespace, lifecycle.DefKey("kv"), []byte("definition"), statedb.Version{Block: 3, Tx: 1})
		}
		if err := db.Apply(&batch, uint64(lo/per+1), false); err != nil {
			b.Fatal(err)
		}
	}
	for _, bound := range []bool{false, true} {
		rng := rand.New(rand.NewSource(1))
		txs := make([]txWork, txsPerBlock)
		for i := range txs {
			rw := &api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: "kv"}}}
			for r := 0; r < readsPerTx; r++ {
				k := rng.Intn(keys)
				rw.Namespaces[0].Reads = append(rw.Namespaces[0].Reads, rd(fmt.Sprint("k", k), ver(uint64(k%7), uint32(k))))
			}
			rw.Namespaces[0].Writes = append(rw.Namespaces[0].Writes, wr(fmt.Sprint("w", i), "v"))
			if bound {
				lifecycle.Bind(rw, "kv", ver(3, 1))
			}
			txs[i] = txWork{rw: rw, ver: statedb.Version{Block: 1000, Tx: uint32(i)}}
		}
		b.Run(map[bool]string{false: "unbound", true: "bound"}[bound], func(b *testing.B) {
			benchValidate(b, newView(db, 0), txs)
		})
	}
}
