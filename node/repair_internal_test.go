package node

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
)

// TestFetchSkipsBadCopies: an orderer that sends a bad copy of a damaged
// block (signed by an impostor, or well signed but not the block the
// chain holds) costs one try: the repair takes the next orderer's copy.
func TestFetchSkipsBadCopies(t *testing.T) {
	ordCA, err := identity.NewCA("OrdererOrg", identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	rogueCA, err := identity.NewCA("OrdererOrg", identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	ord, err := ordCA.Issue("orderer0", identity.RoleOrderer, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	rogue, err := rogueCA.Issue("orderer0", identity.RoleOrderer, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := identity.NewRegistry([]identity.Org{{ID: "OrdererOrg", CACerts: [][]byte{ordCA.CertDER()}}})
	if err != nil {
		t.Fatal(err)
	}
	ch := committer.Channel{Name: "ch", Registry: reg, OrdererOrgs: []string{"OrdererOrg"}}
	store, err := ledger.OpenBlockStore(t.TempDir(), ledger.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	block := func(n uint64, prev []byte, tx string, s api.Signer) (*api.Block, []byte) {
		b, err := api.BuildBlock(n, prev, [][]byte{[]byte(tx)}, s)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := proto.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		return b, raw
	}
	var prev []byte
	var raws [][]byte
	for n := range uint64(3) {
		b, raw := block(n, prev, "tx"+string(rune('0'+n)), ord)
		hh := api.HeaderHash(b.Header)
		e := ledger.Entry{Number: n, HeaderHash: hh, PrevHash: prev, Raw: raw, TxIDs: []string{""}, Codes: []byte{byte(api.TxValidationCode_NOT_VALIDATED)}}
		if err := store.Append([]ledger.Entry{e}); err != nil {
			t.Fatal(err)
		}
		prev, raws = hh, append(raws, raw)
	}
	b0, _ := store.Block(0)
	_, forged := block(1, api.HeaderHash(b0.Header), "tx1", rogue)         // the impostor's signature
	_, other := block(1, api.HeaderHash(b0.Header), "something else", ord) // signed, but not the chain's block 1

	check := func(raw []byte) error { return checkCopy(&ch, store, 1, raw) }
	for name, c := range map[string]struct {
		raw  []byte
		want string
	}{
		"forged":    {forged, "signer"},
		"not ours":  {other, "the stored block 2 names"},
		"undecoded": {[]byte("junk"), "copy of block 1"},
	} {
		if err := check(c.raw); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s copy: %v, want an error naming %q", name, err, c.want)
		}
	}
	if err := check(raws[1]); err != nil {
		t.Fatalf("the true copy: %v", err)
	}
	orderers := func() []api.OrdererClient {
		return []api.OrdererClient{copyServer{raw: forged}, copyServer{raw: other}, copyServer{raw: raws[1]}}
	}
	got, err := fetchBlock(orderers, "ch", 1, check, slog.New(slog.DiscardHandler))
	if err != nil || string(got) != string(raws[1]) {
		t.Fatalf("fetchBlock: %d bytes, %v; want the third orderer's true copy", len(got), err)
	}
}

// copyServer is an orderer whose Deliver sends one block's bytes.
type copyServer struct {
	api.OrdererClient
	raw []byte
}

func (c copyServer) Deliver(context.Context, *api.DeliverRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[api.DeliverResponse], error) {
	return &copyStream{raw: c.raw}, nil
}

type copyStream struct {
	grpc.ClientStream
	raw []byte
}

func (s *copyStream) Recv() (*api.DeliverResponse, error) {
	return &api.DeliverResponse{Block: s.raw}, nil
}
