package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestReadPolicy: with readers OR('Org2.member'), Org1's client may
// neither Deliver blocks from the orderer nor subscribe to its peer's
// block events (PermissionDenied naming the policy), Org2's client may,
// and both orgs' peers still follow the orderer: a transaction commits on
// both. An org added later is not a reader either: the policy stays as
// written.
func TestReadPolicy(t *testing.T) {
	n := startNetworkSpec(t, localnet.Spec{Orgs: 2, Orderers: 1, Readers: "OR('Org2.member')",
		Batch: node.BatchConfig{MaxTxs: 100, MaxBytes: 1 << 20, Timeout: 5 * time.Millisecond}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	deliver := func(i int) error {
		c := n.layout.Clients[i]
		tlsCfg, err := node.ClientTLS(n.ch, c.TLSCert, c.TLSKey)
		if err != nil {
			t.Fatal(err)
		}
		cc, err := grpc.NewClient(n.orderer.Addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		stream, err := api.NewOrdererClient(cc).Deliver(ctx, &api.DeliverRequest{Channel: n.ch.Channel, Start: 0, Stop: true})
		if err != nil {
			return err
		}
		_, err = stream.Recv()
		return err
	}
	denied := func(what string, err error) {
		t.Helper()
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "Org1/") ||
			!strings.Contains(err.Error(), "read policy (readers) is OR('Org2.member')") {
			t.Errorf("%s: %v; want PermissionDenied naming the caller and the policy", what, err)
		}
	}
	denied("Org1's client, Deliver", deliver(0))
	if err := deliver(1); err != nil {
		t.Errorf("Org2's client, Deliver: %v", err)
	}
	events, errc := n.gateway(t, 0).BlockEvents(ctx, 0)
	for range events {
		t.Error("Org1's client received a block event")
	}
	denied("Org1's client, block events", <-errc)
	events2, _ := n.gateway(t, 1).BlockEvents(ctx, 0)
	if ev := <-events2; ev == nil || ev.Number != 0 {
		t.Errorf("Org2's client: first block event %v, want block 0", ev)
	}

	c, err := n.connect(t, 1).Submit(ctx, "create_account", "bob", "Bob", "10", "0")
	if err != nil || c.Code != api.TxValidationCode_VALID {
		t.Fatalf("Org2's transaction: %v, %v", c, err)
	}
	n.waitSameHeight(t)

	// An explicit policy stays as written: an added org's client may not
	// read until the policy names it.
	n.addOrg(t, ctx, "Org3")
	events3, errc3 := n.connectAs(t, "Org3", "peer0.Org2").Gateway.BlockEvents(ctx, 0)
	for range events3 {
		t.Error("Org3's client received a block event")
	}
	if err := <-errc3; status.Code(errors.Unwrap(err)) != codes.PermissionDenied || !strings.Contains(err.Error(), "read policy (readers) is OR('Org2.member')") {
		t.Errorf("Org3's client, block events: %v; want PermissionDenied naming the policy", err)
	}
}
