package committer

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

// TestEndorsementBinding replays endorsements under other transactions,
// the attacks of issue #15: a pending transaction's endorsements wrapped
// under another client's tx id and ordered first; a committed blind write
// re-wrapped after its key changed, to roll it back; an endorsement made
// for another channel. On a format 2 channel each is
// INVALID_ENDORSER_TRANSACTION and the state is untouched; a format 1
// channel (chains written before binding) keeps its old meaning, in which
// the replays are VALID, so that a chain never changes meaning under a peer.
func TestEndorsementBinding(t *testing.T) {
	for _, tc := range []struct {
		format api.Format
		want   api.TxValidationCode // for each replay
		victim api.TxValidationCode // for the transaction whose endorsements were taken
		k      string               // the value of k after the replay of its first write
	}{
		{api.Format2, api.TxValidationCode_INVALID_ENDORSER_TRANSACTION, api.TxValidationCode_VALID, "v2"},
		{api.Format1, api.TxValidationCode_VALID, api.TxValidationCode_MVCC_READ_CONFLICT, "v1"},
	} {
		t.Run("format"+tc.format.String(), func(t *testing.T) {
			n := newTestNet(t)
			n.ch.Format = tc.format
			p := openPeer(t, n, t.TempDir(), Options{})
			sub := p.Subscribe(16)

			loadV1 := n.tx(rwset(testContract, nil, wr("k", "v1"), wr("acct", "100")))
			deliver(t, p, n.block(loadV1))
			deliver(t, p, n.block(n.tx(rwset(testContract, nil, wr("k", "v2")))))
			<-sub.C
			<-sub.C

			// Org1's client deposits; Org2's client takes the endorsed
			// payload and wraps it under its own tx id and signature.
			deposit := n.tx(rwset(testContract, reads(rd("acct", ver(0, 0))), wr("acct", "150")))
			stolen := rewrap(t, deposit, n.client2, testChannel, n.nextNonce())
			// The blind write of block 0, replayed under a new tx id.
			rollback := rewrap(t, loadV1, n.client1, testChannel, n.nextNonce())
			// client1's own endorsement for channel ch2, moved to this
			// channel under the same tx id (same nonce and creator).
			other := n.txWith(api.TxSpec{Channel: "ch2", Contract: testContract, RWSet: rwset(testContract, nil, wr("x", "1"))})
			crossChannel := retagPayload(t, other, n, func(p *api.TxPayload) { p.Header.Channel = testChannel })

			deliver(t, p, n.block(stolen, deposit, rollback, crossChannel))
			ev := <-sub.C
			for i, want := range []api.TxValidationCode{tc.want, tc.victim, tc.want, tc.want} {
				if got := api.TxValidationCode(ev.Codes[i]); got != want {
					t.Errorf("tx %d: code %v, want %v", i, got, want)
				}
			}
			state := dumpState(t, p.db, testContract)
			if got := state["kv/k"]; !strings.HasPrefix(got, tc.k+"@") {
				t.Errorf("k = %s after the replayed blind write, want %s", got, tc.k)
			}
			if tc.format == api.Format2 && state["kv/acct"] != "150@2:1" {
				t.Errorf("acct = %s, want the victim's deposit 150@2:1", state["kv/acct"])
			}
		})
	}
}

// TestUnboundResponseRefused: a response that names no tx id or channel
// (what a format 1 endorser signs) is refused on a format 2 channel, and
// the transaction still uses its tx id (its creator signed it).
func TestUnboundResponseRefused(t *testing.T) {
	n := newTestNet(t)
	p := openPeer(t, n, t.TempDir(), Options{})
	sub := p.Subscribe(4)
	raw := n.tx(rwset(testContract, nil, wr("a", "1")))
	unbound := reendorse(t, raw, n, func(r *api.ResponsePayload) { r.Channel, r.TxId = "", "" })
	deliver(t, p, n.block(unbound))
	if got := api.TxValidationCode((<-sub.C).Codes[0]); got != api.TxValidationCode_INVALID_ENDORSER_TRANSACTION {
		t.Fatalf("code %v, want INVALID_ENDORSER_TRANSACTION", got)
	}
	if loc, ok, err := p.store.TxLocation(txID(t, unbound)); err != nil || !ok || loc.Code != api.TxValidationCode_INVALID_ENDORSER_TRANSACTION {
		t.Errorf("TxLocation = %+v, %v, %v; want the refused tx indexed under its id", loc, ok, err)
	}
}

// rewrap builds a new transaction of creator's on channel around raw's
// response payload and endorsements, unchanged: the replay of issue #15.
func rewrap(t testing.TB, raw []byte, creator *identity.Signer, channel string, nonce []byte) []byte {
	t.Helper()
	p := decodePayload(t, raw)
	hdr := &api.TxHeader{Channel: channel, Creator: creator.Identity(), Nonce: nonce}
	hdr.TxId = api.TxID(nonce, hdr.Creator)
	out, _, err := api.SignTx(&api.TxPayload{Header: hdr, Contract: p.Contract, ResponsePayload: p.ResponsePayload,
		Endorsements: p.Endorsements}, creator)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// reendorse changes raw's response payload and has peer1 and peer2 sign
// it again, and client1 the transaction: only the change is wrong.
func reendorse(t testing.TB, raw []byte, n *testNet, f func(*api.ResponsePayload)) []byte {
	t.Helper()
	return retagPayload(t, raw, n, func(p *api.TxPayload) {
		r := new(api.ResponsePayload)
		if err := proto.Unmarshal(p.ResponsePayload, r); err != nil {
			t.Fatal(err)
		}
		f(r)
		p.ResponsePayload = mustMarshal(t, r)
		p.Endorsements = nil
		for _, e := range []*identity.Signer{n.peer1, n.peer2} {
			sig, err := e.Sign(p.ResponsePayload)
			if err != nil {
				t.Fatal(err)
			}
			p.Endorsements = append(p.Endorsements, &api.Endorsement{Endorser: e.Identity(), Signature: sig})
		}
	})
}

func decodePayload(t testing.TB, raw []byte) *api.TxPayload {
	t.Helper()
	tx, p := new(api.Transaction), new(api.TxPayload)
	if err := proto.Unmarshal(raw, tx); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(tx.Payload, p); err != nil {
		t.Fatal(err)
	}
	return p
}
