package api_test

import (
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

// FuzzChannelOf: any bytes give a channel or an error and never panic,
// and a transaction that DecodeTx accepts is routed to the channel its
// header names (the routing hint agrees with the full decode).
func FuzzChannelOf(f *testing.F) {
	ca, err := identity.NewCA("Org1", identity.ECDSAP256)
	if err != nil {
		f.Fatal(err)
	}
	client, err := ca.Issue("c", identity.RoleClient, identity.ECDSAP256)
	if err != nil {
		f.Fatal(err)
	}
	tx, _, err := api.BuildTx(api.TxSpec{Channel: "demo2", Contract: "kv", Function: "f", Nonce: []byte("n"), RWSet: &api.RWSet{}},
		client, []api.Signer{client})
	if err != nil {
		f.Fatal(err)
	}
	update, err := api.EncodeConfigUpdate(&api.ConfigUpdate{Channel: "demo3", Sequence: 1})
	if err != nil {
		f.Fatal(err)
	}
	cfg, err := (&api.ConfigEnvelope{Update: update}).Encode()
	if err != nil {
		f.Fatal(err)
	}
	for _, tc := range []struct {
		raw  []byte
		want string
	}{{tx, "demo2"}, {cfg, "demo3"}} {
		if got, err := api.ChannelOf(tc.raw); err != nil || got != tc.want {
			f.Fatalf("ChannelOf = %q, %v; want %q", got, err, tc.want)
		}
		f.Add(tc.raw)
	}
	f.Add([]byte{})
	f.Add([]byte(api.MembersMagic + "{"))
	f.Add(tx[:len(tx)/2])
	f.Fuzz(func(t *testing.T, raw []byte) {
		ch, err := api.ChannelOf(raw)
		dec, _, derr := api.DecodeTx(raw)
		if derr != nil {
			return
		}
		if err != nil || ch != dec.Payload.Header.Channel {
			t.Fatalf("ChannelOf = %q, %v; DecodeTx's header names %q", ch, err, dec.Payload.Header.Channel)
		}
	})
}
