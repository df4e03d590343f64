package endorser

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
)

// FuzzProcessProposal feeds arbitrary SignedProposal bytes to
// ProcessProposal: it must answer every input, never panic, and endorse
// only with a 200 status.
func FuzzProcessProposal(f *testing.F) {
	fx := newFixture(f)
	fx.commit(f, "a=1", "b=2")
	e := fx.e(f)
	seed := func(sp *api.SignedProposal) {
		raw, err := proto.Marshal(sp)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	seed(sign(f, proposal(f, fx.client, testChannel, testNS, "do", "get", "a", "put", "c", "3", "range", "a", "", "1", ""), fx.client))
	seed(sign(f, proposal(f, fx.client, testChannel, testNS, "do", "range", "a", "b"), fx.client)) // short script: contract panics
	seed(sign(f, proposal(f, fx.client, testChannel, testNS, "fail", "404", "x"), fx.client))
	seed(sign(f, proposal(f, fx.client, "ch2", testNS, "do"), fx.client))
	seed(sign(f, proposal(f, fx.peer1, testChannel, testNS, "do"), fx.peer1))
	seed(sign(f, &api.Proposal{Header: &api.TxHeader{Channel: testChannel, Creator: &api.Identity{Org: "Org1", Cert: []byte{0x30, 0}}, Nonce: []byte{1}}}, fx.client))
	seed(&api.SignedProposal{Proposal: []byte{0x0a, 0x02, 0x0a, 0x00}})
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0xff})

	f.Fuzz(func(t *testing.T, raw []byte) {
		sp := new(api.SignedProposal)
		if err := proto.Unmarshal(raw, sp); err != nil {
			return
		}
		resp := e.ProcessProposal(context.Background(), sp)
		if resp == nil {
			t.Fatal("nil response")
		}
		if (resp.Status == 200) != (resp.Endorsement != nil) {
			t.Fatalf("status %d with endorsement %v", resp.Status, resp.Endorsement != nil)
		}
		if resp.Status != 200 && resp.Message == "" {
			t.Fatalf("status %d without a message", resp.Status)
		}
	})
}
