package api_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

// FuzzDecodeTx: any bytes decode to a code and never panic; a transaction
// that decodes VALID keeps the invariants later stages rely on.
func FuzzDecodeTx(f *testing.F) {
	ca, err := identity.NewCA("Org1", identity.ECDSAP256)
	if err != nil {
		f.Fatal(err)
	}
	client, err := ca.Issue("c", identity.RoleClient, identity.ECDSAP256)
	if err != nil {
		f.Fatal(err)
	}
	rw := &api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: "kv",
		Reads:      []*api.KVRead{{Key: "a", Version: &api.Version{Block: 1}}},
		RangeReads: []*api.RangeRead{{StartKey: "a", EndKey: "b", Exhausted: true}},
		Writes:     []*api.KVWrite{{Key: "a", Value: []byte("1")}, {Key: "b", IsDelete: true}}}}}
	valid, _, err := api.BuildTx(api.TxSpec{Channel: "ch", Contract: "kv", Function: "f", Nonce: []byte("n"), RWSet: rw},
		client, []api.Signer{client})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x00})
	f.Add(valid[:len(valid)/2])
	f.Fuzz(func(t *testing.T, raw []byte) {
		tx, code, err := api.DecodeTx(raw)
		if (err == nil) != (code == api.TxValidationCode_VALID) {
			t.Fatalf("code %v with error %v", code, err)
		}
		if err != nil {
			return
		}
		if tx.ID() != api.TxID(tx.Payload.Header.Nonce, tx.Creator()) || tx.Response.Rwset == nil {
			t.Fatalf("VALID transaction breaks an invariant: %v", tx.Payload)
		}
		for _, ns := range tx.Response.Rwset.Namespaces {
			if api.CheckNamespace(ns.Namespace) != nil || (len(ns.Writes) > 0 && ns.Namespace != tx.Payload.Contract) {
				t.Fatalf("VALID transaction with a bad namespace %q", ns.Namespace)
			}
		}
		if _, err := proto.Marshal(tx.Envelope); err != nil {
			t.Fatal(err)
		}
	})
}
