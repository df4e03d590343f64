package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/metriclint"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// network is a running local network: orderers and one peer per org,
// all over mutual TLS on 127.0.0.1.
type network struct {
	layout   *localnet.Layout
	ch       *node.ChannelConfig
	peers    []*node.Peer
	orderer  *node.Orderer // the first
	orderers []*node.Orderer
	configs  []*node.NodeConfig // of every node, in layout order
}

func startNetwork(t *testing.T, orderers int) *network {
	return startNetworkWith(t, orderers, nil)
}

// startNetworkWith is startNetwork with tune applied to every node's
// config before it starts; the configs are kept in n.configs.
func startNetworkWith(t *testing.T, orderers int, tune func(*node.NodeConfig)) *network {
	return startNetworkSpec(t, localnet.Spec{Orgs: 2, Orderers: orderers,
		Batch: node.BatchConfig{MaxTxs: 100, MaxBytes: 1 << 20, Timeout: 5 * time.Millisecond}}, tune)
}

// startNetworkSpec starts the network spec describes, in this process.
func startNetworkSpec(t *testing.T, spec localnet.Spec, tune func(*node.NodeConfig)) *network {
	t.Helper()
	layout, err := localnet.Generate(t.TempDir(), spec)
	if err != nil {
		t.Fatal(err)
	}
	n := &network{layout: layout}
	if n.ch, err = node.LoadChannel(layout.Channel); err != nil {
		t.Fatal(err)
	}
	for _, nd := range layout.Nodes {
		cfg, err := node.LoadNode(nd.Config)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Metrics = "127.0.0.1:0"
		cfg.Profile = nd.Role == identity.RolePeer
		if tune != nil {
			tune(cfg)
		}
		n.configs = append(n.configs, cfg)
		switch nd.Role {
		case identity.RoleOrderer:
			o, err := node.StartOrderer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if n.orderer == nil {
				n.orderer = o
			}
			n.orderers = append(n.orderers, o)
			t.Cleanup(func() { o.Close() })
		case identity.RolePeer:
			p, err := node.StartPeer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			n.peers = append(n.peers, p)
			t.Cleanup(func() { p.Close() })
		}
	}
	return n
}

// connect returns a client of the i-th org's client identity, talking to
// that org's peer.
func (n *network) connect(t *testing.T, i int) *client.Contract {
	t.Helper()
	return n.gateway(t, i).Contract(n.ch.Channel, smallbank.Name)
}

// gateway connects the i-th org's client identity to that org's peer.
func (n *network) gateway(t *testing.T, i int) *client.Gateway {
	t.Helper()
	c := n.layout.Clients[i]
	certPEM, err := os.ReadFile(c.Cert)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := identity.LoadSigner(c.Org, certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := node.ClientTLS(n.ch, c.TLSCert, c.TLSKey)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := client.Connect(n.peers[i].Addr, signer, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	return gw
}

// TestNetwork runs Smallbank through a real network: clients of both orgs
// submit through their own org's peer; both peers end with the same chain
// and the same state, and the money adds up.
func TestNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a network")
	}
	n := startNetwork(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	org1, org2 := n.connect(t, 0), n.connect(t, 1)
	submit := func(c *client.Contract, fn string, args ...string) error {
		commit, err := c.SubmitWithRetry(ctx, 50, fn, args...)
		if err != nil {
			return fmt.Errorf("%s%q: %w", fn, args, err)
		}
		if commit.Code != api.TxValidationCode_VALID {
			return fmt.Errorf("%s%q committed %v", fn, args, commit.Code)
		}
		return nil
	}
	mustSubmit := func(c *client.Contract, fn string, args ...string) {
		t.Helper()
		if err := submit(c, fn, args...); err != nil {
			t.Fatal(err)
		}
	}
	mustSubmit(org1, "create_account", "alice", "Alice", "1000", "0")
	mustSubmit(org2, "create_account", "bob", "Bob", "1000", "0")
	// A commit is reported by the submitting client's own peer; the other
	// org's peer may be a block behind. Both accounts must be on both
	// peers before either org endorses a payment between them.
	n.waitSameHeight(t)
	// Two clients pay each other concurrently: they contend on the same
	// keys, so some attempts conflict and SubmitWithRetry runs them again.
	errc := make(chan error, 1)
	go func() {
		for i := 0; i < 10; i++ {
			if err := submit(org1, "send_payment", "alice", "bob", "10"); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i := 0; i < 10; i++ {
		mustSubmit(org2, "send_payment", "bob", "alice", "3")
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	mustSubmit(org2, "deposit_checking", "bob", "7")
	// Queries below go to Org1's peer, which may be a block behind Org2's.
	n.waitSameHeight(t)

	var a, b smallbank.Balance
	for _, acct := range []struct {
		id  string
		out *smallbank.Balance
	}{{"alice", &a}, {"bob", &b}} {
		raw, err := org1.Evaluate(ctx, "query", acct.id)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, acct.out); err != nil {
			t.Fatal(err)
		}
	}
	if a.Checking != 1000-100+30 || b.Checking != 1000+100-30+7 {
		t.Fatalf("alice %+v, bob %+v", a, b)
	}

	// Both peers converge on the same chain and state.
	n.waitSameHeight(t)
	if h0, h1 := n.peers[0].Store.LastHash(), n.peers[1].Store.LastHash(); string(h0) != string(h1) {
		t.Fatalf("peers disagree on the last block hash")
	}
	if s0, s1 := dump(t, n.peers[0].State), dump(t, n.peers[1].State); !reflect.DeepEqual(s0, s1) {
		t.Fatalf("peers' states differ:\n%v\n%v", s0, s1)
	}
	for _, p := range n.peers {
		if err := p.Store.VerifyChain(); err != nil {
			t.Fatal(err)
		}
	}
	// Every node serves Prometheus metrics.
	scrape(t, n.peers[0].MetricsAddr(), `strand_committer_transactions_total{code="VALID"}`, "strand_endorser_endorsed_total", "strand_gateway_", `strand_committer_stage_seconds_bucket{stage="verify",le="0.0001"}`, "strand_gateway_endorse_latency_seconds_bucket", "strand_gateway_commit_latency_seconds_count", "strand_committer_signed_height", `strand_committer_busy_seconds_total{stage="persist"}`, "strand_committer_pipeline_busy_seconds_total")
	scrape(t, n.orderer.MetricsAddr(), "strand_orderer_blocks_total", "strand_blockstore_height", `strand_build_info{build_time="unknown",commit=`)
	// And the endpoints of a supervisor: alive, ready, and an index.
	for _, c := range []struct {
		addr, path string
		code       int
		want       string
	}{
		{n.peers[0].MetricsAddr(), "/healthz", http.StatusOK, "ok"},
		{n.peers[0].MetricsAddr(), "/readyz", http.StatusOK, "ready"},
		{n.orderer.MetricsAddr(), "/readyz", http.StatusOK, "ready"},
		{n.orderer.MetricsAddr(), "/", http.StatusOK, "strand node orderer0 serves:\n  /metrics"},
		{n.peers[0].MetricsAddr(), "/nope", http.StatusNotFound, "404: /nope is not served here.\nstrand node peer0.Org1 serves:"},
		{n.peers[0].MetricsAddr(), "/", http.StatusOK, "/debug/pprof/"},
	} {
		if code, body := httpGet(t, c.addr, c.path); code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d %q, want %d and %q", c.path, code, body, c.code, c.want)
		}
	}
	// A second start of a running node is refused naming its data
	// directory and the process holding it; a missing certificate is
	// named as such, even then.
	if _, err := node.StartPeer(n.configs[1]); !errors.Is(err, node.ErrDataDirInUse) || !strings.Contains(err.Error(), n.configs[1].DataDir) {
		t.Errorf("second start of %s: %v, want ErrDataDirInUse naming %s", n.configs[1].Name, err, n.configs[1].DataDir)
	}
	noCert := *n.configs[1]
	noCert.TLS.Cert += ".missing"
	if _, err := node.StartPeer(&noCert); err == nil || errors.Is(err, node.ErrDataDirInUse) || !strings.Contains(err.Error(), "tls.cert, the node's TLS certificate: open "+noCert.TLS.Cert) {
		t.Errorf("start with a missing TLS certificate: %v, want an error naming tls.cert", err)
	}
	// Profiles are served where asked for, and only there.
	if code := httpStatus(t, n.peers[0].MetricsAddr(), "/debug/pprof/heap"); code != http.StatusOK {
		t.Errorf("peer with profile: GET /debug/pprof/heap = %d, want 200", code)
	}
	if code := httpStatus(t, n.orderer.MetricsAddr(), "/debug/pprof/heap"); code != http.StatusNotFound {
		t.Errorf("orderer without profile: GET /debug/pprof/heap = %d, want 404", code)
	}
}

func httpStatus(t *testing.T, addr, path string) int {
	t.Helper()
	code, _ := httpGet(t, addr, path)
	return code
}

func httpGet(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// scrape reads a node's whole /metrics page, checks that it holds each of
// want, and lints it (Prometheus' conventions: internal/metriclint).
func scrape(t *testing.T, addr string, want ...string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(body), w) {
			t.Errorf("metrics at %s lack %q", addr, w)
		}
	}
	problems, err := metriclint.Lint(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metrics at %s: %s", addr, p)
	}
}

func dump(t *testing.T, db statedb.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := db.Scan(smallbank.Name, "", "", func(k string, v statedb.Value) bool {
		out[k] = string(v.Data) + "@" + v.Version.String()
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitSameHeight waits until both peers have committed every block the
// orderer has cut.
func (n *network) waitSameHeight(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for n.peers[0].Committer.Height() != n.peers[1].Committer.Height() || n.peers[0].Committer.Height() != n.orderer.Orderer.Height() {
		if time.Now().After(deadline) {
			t.Fatalf("heights: peers %d, %d; orderer %d", n.peers[0].Committer.Height(), n.peers[1].Committer.Height(), n.orderer.Orderer.Height())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
