package main

import (
	"bufio"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// TestNetOrdererChannels: three orderer processes, one Raft cluster,
// order two channels (each its own Raft group, block store and Raft log)
// for two peers that serve both. Under Smallbank load on both channels
// the leader of demo is SIGKILLed, and restarted once the load is over.
// Then each channel's chain verifies on every node (`strand net verify`'s
// checks), both peers agree on every account of each channel, and each
// channel's Smallbank invariant holds; the orderers' Raft metrics are
// labelled by channel; and a Broadcast (Submit) or Deliver for a channel
// the orderers do not order is refused by name.
func TestNetOrdererChannels(t *testing.T) {
	n := startRaftNet(t, localnet.Spec{Orderers: 3, Channels: 2})
	if _, ok := n.lay.Node("orderer-demo2"); ok {
		t.Fatal("the network has an orderer of demo2's own; want demo2 ordered by the network's orderers")
	}
	demo2File := n.lay.Channels[0]
	d1, d2 := n.c1.OnChannel("demo2"), n.c2.OnChannel("demo2")
	b := strconv.Itoa(netBalance)
	if _, err := d1.Contract(smallbank.Name).Submit(n.ctx, "create_account", "0", "A0", b, b); err != nil {
		t.Fatal(err)
	}
	netCreateAccounts(t, n.ctx, d1.Contract(smallbank.Name))

	l1, done1 := n.load(4 * time.Second)
	l2 := &ledgerLoad{}
	done2 := make(chan struct{})
	go func() {
		defer close(done2)
		l2.run(n.ctx, 4*time.Second, d1.Contract(smallbank.Name), d2.Contract(smallbank.Name))
	}()
	time.Sleep(time.Second)
	leader := channelLeader(t, n.lay, "demo", "")
	n.kill(t, leader)
	t.Logf("killed %s, demo's leader; demo2's leader is now %s", leader, channelLeader(t, n.lay, "demo2", leader))
	<-done1
	<-done2
	n.restart(t)

	for _, c := range []struct {
		file   string
		load   *ledgerLoad
		c1, c2 *localnet.Conn
	}{{n.lay.Channel, l1, n.c1, n.c2}, {demo2File, l2, d1, d2}} {
		c.load.report(t)
		chains, err := localnet.Verify(n.ctx, n.lay, localnet.VerifyOptions{Idle: 150 * time.Millisecond, Settle: 30 * time.Second, Channel: c.file})
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		delta := c.load.settle(t, n.ctx, c.c1.Gateway, c.c2.Gateway)
		total := compareAccounts(t, n.ctx, c.c1.Contract(smallbank.Name), c.c2.Contract(smallbank.Name))
		if want := int64(netAccounts*2*netBalance) + delta; total != want {
			t.Fatalf("%s: Smallbank invariant broken: total %d, want %d", c.file, total, want)
		}
		t.Logf("%s: every node at height %d, last block %x", c.file, chains[0].Height, chains[0].Last)
	}

	// Per-channel Raft metrics, on every orderer: each channel's series
	// carry its label, and every member knows each channel's leader.
	for _, name := range n.orderers() {
		nd, _ := n.lay.Node(name)
		for _, ch := range []string{"demo", "demo2"} {
			if v := labelledGauge(nd.Metrics, "strand_orderer_raft_leader", ch); v == "" || v == "0" {
				t.Errorf("%s: strand_orderer_raft_leader{channel=%q} = %q, want a leader's id", name, ch, v)
			}
		}
	}

	// net status reads the first channel's labelled series.
	if out := mustCLI(t, "net", "status", "--dir", n.dir); !strings.Contains(out, "(Raft leader)") {
		t.Errorf("net status shows no Raft leader of demo:\n%s", out)
	}

	// An unknown channel, refused by name: Deliver and Submit (Broadcast).
	nd, _ := n.lay.Node("orderer0")
	cl, err := n.lay.Client("Org1")
	if err != nil {
		t.Fatal(err)
	}
	ch, err := node.LoadChannel(n.lay.Channel)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := node.ClientTLS(ch, cl.TLSCert, cl.TLSKey)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(nd.Address, grpc.WithTransportCredentials(credentials.NewTLS(node.ExpectServer(tlsCfg, identity.RoleOrderer))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	want := `orderer: unknown channel "nope": this orderer orders channel(s) demo, demo2`
	stream, err := api.NewOrdererClient(conn).Deliver(n.ctx, &api.DeliverRequest{Channel: "nope", Stop: true})
	if err == nil {
		_, err = stream.Recv()
	}
	if st := status.Convert(err); st.Code() != codes.NotFound || st.Message() != want {
		t.Errorf("Deliver of channel nope: %v, want NotFound %q", err, want)
	}
	signer := loadSigner(t, cl)
	raw, _, err := api.BuildTx(api.TxSpec{Channel: "nope", Contract: smallbank.Name, Function: "f", Nonce: []byte("nonce"), RWSet: &api.RWSet{}}, signer, []api.Signer{signer})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := api.NewOrdererClient(conn).Submit(n.ctx, &api.SubmitRequest{Transaction: raw})
	if err != nil || resp.GetStatus() != 404 || resp.GetMessage() != want {
		t.Errorf("Submit for channel nope: %v, %v; want 404 %q", resp, err, want)
	}
}

// channelLeader scrapes the live orderers' metrics until one other than
// not leads channel ch's Raft group; it returns its name.
func channelLeader(t *testing.T, lay *localnet.Layout, ch, not string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, nd := range lay.Nodes {
			if nd.Name == not || nd.Role != identity.RoleOrderer {
				continue
			}
			if id := labelledGauge(nd.Metrics, "strand_orderer_raft_id", ch); id != "" && id != "0" && id == labelledGauge(nd.Metrics, "strand_orderer_raft_leader", ch) {
				return nd.Name
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no orderer other than %q leads channel %s after 15 s", not, ch)
	return ""
}

// labelledGauge returns the value of metric name{channel="ch"} at addr's
// /metrics, "" if absent.
func labelledGauge(addr, name, ch string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	want := name + `{channel="` + ch + `"}`
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == want {
			return f[1]
		}
	}
	return ""
}

func loadSigner(t *testing.T, c localnet.Client) *identity.Signer {
	t.Helper()
	cert, err := os.ReadFile(c.Cert)
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := identity.LoadSigner(c.Org, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
