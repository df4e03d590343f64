package node_test

import (
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestClusterRefusesNonOrderersUnread: a client's call to an orderer's
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
