package committer

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
	"github.com/strand-ledger/strand/policy"
)

// FuzzVerifyTx: stage 1 on arbitrary transaction bytes never panics and
// only a fully verified transaction comes out VALID.
func FuzzVerifyTx(f *testing.F) {
	n := newTestNet(f)
	n.ch.Lifecycle = policy.MustParse("OutOf(2,'Org1.admin','Org2.admin')")
	rules := n.ch.newRuleSet(0, lifecycle.NewTable(n.ch.Policies, nil), nil)
	valid := n.tx(rwset(testContract, reads(rd("a", ver(1, 2))), wr("a", "1")))
	f.Add(valid)
	f.Add(n.txBy(rwset(testContract, nil, wr("a", "1")), n.client1, n.peer1))
	f.Add([]byte{})
	f.Add([]byte("\x0a\x02\x0a\x00\x12\x01x"))
	f.Add(n.defTx("cc2", 1, "OR('Org1.peer')", []byte("\x00asm"), n.org1Admin, n.org2Admin))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := verifyTx(&n.ch, rules, raw)
		if (r.code == api.TxValidationCode_VALID) != (r.err == nil) {
			t.Fatalf("code %v with error %v", r.code, r.err)
		}
	})
}

// FuzzBlock: decoding and checking arbitrary block bytes never panics, and
// nothing but a correctly signed block passes.
func FuzzBlock(f *testing.F) {
	n := newTestNet(f)
	good := n.block(n.tx(rwset(testContract, nil, wr("a", "1"))))
	f.Add(good)
	f.Add([]byte{})
	f.Add(good[:len(good)-1])
	f.Fuzz(func(t *testing.T, raw []byte) {
		b := new(api.Block)
		if proto.Unmarshal(raw, b) != nil || b.Header == nil {
			return
		}
		err := verifyBlock(&n.ch, b, api.HeaderHash(b.Header))
		if err == nil && string(raw) != string(good) {
			// Re-encodings of the good block are fine; anything else
			// that passes must carry the orderer's signature.
			if b.Metadata.GetSignature().GetSigner().GetOrg() != "OrdererOrg" {
				t.Fatalf("a block not signed by the orderer passed")
			}
		}
	})
}

// FuzzModesAgree: any read/write sets (one transaction per namespace entry
// of the decoded RWSet) get the same codes and state in both modes.
func FuzzModesAgree(f *testing.F) {
	seed := &api.RWSet{Namespaces: []*api.NsRWSet{
		{Namespace: "kv", Writes: []*api.KVWrite{wr("a", "1")}},
		{Namespace: "kv", Reads: reads(rd("a", nil)), Writes: []*api.KVWrite{wr("b", "2")}},
		{Namespace: "kv", RangeReads: []*api.RangeRead{{StartKey: "a", Exhausted: true}}, Writes: []*api.KVWrite{del("a")}},
	}}
	raw, _ := proto.Marshal(seed)
	f.Add(raw)
	f.Fuzz(func(t *testing.T, raw []byte) {
		rw := new(api.RWSet)
		if proto.Unmarshal(raw, rw) != nil || len(rw.Namespaces) > 200 {
			return
		}
		txs := make([]txWork, 0, len(rw.Namespaces))
		for i, ns := range rw.Namespaces {
			if api.CheckNamespace(ns.Namespace) != nil {
				return
			}
			txs = append(txs, txWork{rw: &api.RWSet{Namespaces: []*api.NsRWSet{ns}}, ver: statedb.Version{Block: 3, Tx: uint32(i)}})
		}
		seq, par := newView(memdb.New(), 0), newView(memdb.New(), 0)
		s, p := cloneWork(txs), cloneWork(txs)
		if err := validateSequential(seq, s); err != nil {
			t.Fatal(err)
		}
		if err := validateParallel(par, p, 4); err != nil {
			t.Fatal(err)
		}
		for i := range s {
			if s[i].code != p[i].code {
				t.Fatalf("tx %d: sequential %v, parallel %v", i, s[i].code, p[i].code)
			}
		}
	})
}
