package node_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestClusterRefusesNonOrderersUnread: another orderer's Raft message over
// the channel's block size is refused on its length prefix, and a
// client's call to an orderer's
// Cluster service (Raft messages, forwarded transactions) is refused on its
// headers, while the client is still sending a message it declared to be
// 200 MB, and the refusal names the service, the certificate and its
// role. Before the client and cluster servers were split, Forward, a unary
// method, read the whole message (up to api.MaxBlockMessage) before it
// checked the caller, so the half-sent call was never answered.
func TestClusterRefusesNonOrderersUnread(t *testing.T) {
	layout, err := localnet.Generate(t.TempDir(), localnet.Spec{Orgs: 1, Orderers: 2})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := node.LoadChannel(layout.Channel)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := node.LoadNode(layout.Nodes[0].Config) // the first orderer; the cluster need not have a leader
	if err != nil {
		t.Fatal(err)
	}
	o, err := node.StartOrderer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	c := layout.Clients[0]
	tlsCfg, err := node.ClientTLS(ch, c.TLSCert, c.TLSKey)
	if err != nil {
		t.Fatal(err)
	}
	// An orderer reaches the cluster server, whose limit is the channel's
	// block size (api.BlockMessage of batch.maxBytes), not the 268 MiB
	// any channel might need (api.MaxBlockMessage, the limit before).
	other, err := node.LoadNode(layout.Nodes[1].Config)
	if err != nil {
		t.Fatal(err)
	}
	ordTLS, err := node.ClientTLS(ch, other.TLS.Cert, other.TLS.Key)
	if err != nil {
		t.Fatal(err)
	}
	batch := ch.OrdererBatch()
	batch.EnsureDefaults()
	limit := api.BlockMessage(batch.MaxBytes)
	end := dialH2(t, o.Addr, ordTLS).call(t, "/strand.orderer.Cluster/Step", uint32(limit+1), make([]byte, 64<<10))
	select {
	case got := <-end:
		if want := fmt.Sprintf("grpc-status 8: grpc: received message larger than max (%d vs. %d)", limit+1, limit); got != want {
			t.Errorf("a Raft message of %d bytes from an orderer: %s, want %s", limit+1, got, want)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("a Raft message of %d bytes from an orderer, half sent, was not refused in 10 s (the channel's limit is %d)", limit+1, limit)
	}

	for _, method := range []string{"/strand.orderer.Cluster/Forward", "/strand.orderer.Cluster/Step"} {
		end := dialH2(t, o.Addr, tlsCfg).call(t, method, 200<<20, make([]byte, 64<<10))
		select {
		case got := <-end:
			for _, want := range []string{"grpc-status 7: node: " + method + " refused before its first message was read",
				"serves only the channel's orderers", `"CN=` + c.Name, "its role is client, want orderer"} {
				if !strings.Contains(got, want) {
					t.Errorf("%s from a client: %s, want it to contain %q", method, got, want)
				}
			}
			t.Logf("%s: %s", method, got)
		case <-time.After(10 * time.Second):
			t.Errorf("%s from a client, with a 200 MB message half sent, was not refused in 10 s", method)
		}
	}
}
