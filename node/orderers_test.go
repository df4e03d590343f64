package node

import (
	"log/slog"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

// TestOrdererBookAdoptsConfigBlocks: a peer's orderer set follows the
// config blocks it commits whose update verifies and is next in
// sequence; others leave it as it was.
func TestOrdererBookAdoptsConfigBlocks(t *testing.T) {
	var orgs []identity.Org
	admins := map[string]*identity.Signer{}
	for _, org := range []string{"Org1", "Org2", "OrdererOrg"} {
		ca, err := identity.NewCA(org, identity.ECDSAP256)
		if err != nil {
			t.Fatal(err)
		}
		if admins[org], err = ca.Issue("admin", identity.RoleAdmin, identity.ECDSAP256); err != nil {
			t.Fatal(err)
		}
		orgs = append(orgs, identity.Org{ID: org, CACerts: [][]byte{ca.CertDER()}})
	}
	reg, err := identity.NewRegistry(orgs)
	if err != nil {
		t.Fatal(err)
	}
	var dialled []string
	book := newOrdererBook("ch", reg, 0, func(name, addr string) (api.OrdererClient, error) {
		dialled = append(dialled, name)
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials())) // never used here
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { conn.Close() })
		return named(name, api.NewOrdererClient(conn)), nil
	}, slog.New(slog.DiscardHandler))
	if err := book.set([]OrdererEndpoint{{Name: "o0", Org: "OrdererOrg", Address: "127.0.0.1:1"}, {Name: "o1", Org: "OrdererOrg", Address: "127.0.0.1:2"}}); err != nil {
		t.Fatal(err)
	}
	block := func(seq uint64, names []string, signers ...api.Signer) []byte {
		u := &api.ConfigUpdate{Channel: "ch", Sequence: seq}
		for i, n := range names {
			u.Orderers = append(u.Orderers, api.ConfigOrderer{ID: uint64(i + 1), Org: "OrdererOrg", Name: n, Address: "127.0.0.1:" + n})
		}
		raw, _ := api.EncodeConfigUpdate(u)
		env, err := api.SignConfigUpdate(raw, signers...)
		if err != nil {
			t.Fatal(err)
		}
		tx, _ := env.Encode()
		b, _ := api.BuildBlock(5, []byte("prev"), [][]byte{tx}, nil)
		out, _ := proto.Marshal(b)
		return out
	}
	names := func() []string {
		var out []string
		for _, o := range book.Orderers() {
			out = append(out, o.(interface{ String() string }).String())
		}
		return out
	}
	book.observe(block(0, []string{"o0", "o1", "o2"}, admins["Org1"])) // one org of three: refused
	book.observe(block(1, []string{"o0", "o1", "o2"}, admins["Org1"], admins["OrdererOrg"]))
	if got := names(); len(got) != 2 {
		t.Fatalf("orderers %v after a refused and an out-of-sequence update, want the 2 of the channel file", got)
	}
	book.observe(block(0, []string{"o0", "o1", "o2"}, admins["Org1"], admins["OrdererOrg"]))
	if got := names(); len(got) != 3 || got[2] != "o2" {
		t.Fatalf("orderers %v, want o0, o1, o2", got)
	}
	book.observe(block(1, []string{"o2"}, admins["Org2"], admins["OrdererOrg"]))
	if got := names(); len(got) != 1 || got[0] != "o2" {
		t.Fatalf("orderers %v, want o2 alone", got)
	}
	// The channel file's two, the first update's three (new addresses),
	// and none for the second: o2's connection is kept.
	if want := []string{"o0", "o1", "o0", "o1", "o2"}; !slices.Equal(dialled, want) {
		t.Errorf("dialled %v, want %v", dialled, want)
	}
}
