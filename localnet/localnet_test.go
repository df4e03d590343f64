package localnet

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

func TestGenerateLoadsBack(t *testing.T) {
	dir := t.TempDir()
	lay, err := Generate(dir, Spec{Orgs: 2, PeersPerOrg: 2, Orderers: 3, ClientsPerOrg: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(lay.Nodes) != 7 || len(lay.Clients) != 6 {
		t.Fatalf("layout has %d nodes and %d clients, want 7 and 6", len(lay.Nodes), len(lay.Clients))
	}
	if a, err := lay.Admin(OrdererOrg); err != nil || a.Name != "admin."+OrdererOrg || len(lay.Admins) != 3 {
		t.Fatalf("admin of %s: %+v, %v; %d admins, want one per org (3)", OrdererOrg, a, err, len(lay.Admins))
	}
	if c := lay.Clients[5]; c.Name != "client2.Org2" || c.Org != "Org2" {
		t.Fatalf("last client %+v: want client2.Org2", c)
	}
	ch, err := node.LoadChannel(lay.Channel)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Contracts) != len(DefaultContracts) || len(ch.Orderers()) != 3 || len(ch.PeersOf("Org2")) != 2 {
		t.Fatalf("channel: %d contracts, %d orderers, %d peers of Org2; want %d, 3, 2", len(ch.Contracts), len(ch.Orderers()), len(ch.PeersOf("Org2")), len(DefaultContracts))
	}
	if got := ch.Policies()["smallbank"].String(); got != "AND('Org1.peer','Org2.peer')" {
		t.Errorf("smallbank policy %s", got)
	}
	reg, err := ch.Registry()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Committer(); err != nil {
		t.Fatal(err)
	}
	addrs := map[string]bool{}
	for _, ln := range lay.Nodes {
		if addrs[ln.Address] {
			t.Errorf("address %s used twice", ln.Address)
		}
		addrs[ln.Address] = true
		n, err := node.LoadNode(ln.Config)
		if err != nil {
			t.Fatal(err)
		}
		if n.Name != ln.Name || n.Org != ln.Org || n.Role != ln.Role.String() || n.Listen != ln.Address {
			t.Errorf("node file %s: %+v does not match layout %+v", ln.Config, n, ln)
		}
		if n.Channel != lay.Channel {
			t.Errorf("node %s: channel %s, want %s", ln.Name, n.Channel, lay.Channel)
		}
		if err := n.CheckChannel(ch); err != nil {
			t.Error(err)
		}
		s, err := n.Signer()
		if err != nil {
			t.Fatal(err)
		}
		checkMember(t, reg, s.Identity().Org, s.Identity().Cert, ln.Role)
		checkMember(t, reg, ln.Org, certDER(t, n.TLS.Cert), ln.Role)
		if _, _, err := node.LoadTLS(n, ch); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{n.Identity.Key, n.TLS.Key} {
			if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("key %s: mode %v (%v), want 0600", key, fi.Mode().Perm(), err)
			}
		}
	}
	for _, c := range lay.Clients {
		checkMember(t, reg, c.Org, certDER(t, c.Cert), identity.RoleClient)
		checkMember(t, reg, c.Org, certDER(t, c.TLSCert), identity.RoleClient)
		cert, _ := os.ReadFile(c.Cert)
		key, _ := os.ReadFile(c.Key)
		if _, err := identity.LoadSigner(c.Org, cert, key); err != nil {
			t.Errorf("client %s: %v", c.Name, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "crypto", "Org1", "ca-key.pem")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("CA key: %v %v, want mode 0600", fi, err)
	}
}

func checkMember(t *testing.T, reg *identity.Registry, org string, der []byte, role identity.Role) {
	t.Helper()
	m, err := reg.Member(&api.Identity{Org: org, Cert: der})
	if err != nil {
		t.Fatal(err)
	}
	if m.Role != role {
		t.Errorf("member %s of %s has role %s, want %s", m.Name, org, m.Role, role)
	}
}

func certDER(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return blk.Bytes
}

func TestGenerateDefaultsAndBasePort(t *testing.T) {
	lay, err := Generate(filepath.Join(t.TempDir(), "net"), Spec{BasePort: 17050})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"orderer0 127.0.0.1:17050 127.0.0.1:17053", "peer0.Org1 127.0.0.1:17051 127.0.0.1:17054", "peer0.Org2 127.0.0.1:17052 127.0.0.1:17055"}
	if len(lay.Nodes) != len(want) {
		t.Fatalf("%d nodes, want %d", len(lay.Nodes), len(want))
	}
	loaded, err := Load(lay.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range loaded.Nodes {
		if got := n.Name + " " + n.Address + " " + n.Metrics; got != want[i] {
			t.Errorf("node %d: %s, want %s", i, got, want[i])
		}
	}
}

func TestGenerateRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Generate(dir, Spec{})
	if !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("err %v, want ErrNotEmpty", err)
	}
	t.Log(err)
	if _, err := Generate(t.TempDir(), Spec{Orgs: -1}); err == nil {
		t.Error("Spec.Orgs -1 accepted")
	}
}

func TestGenerateClusterPorts(t *testing.T) {
	lay, err := Generate(filepath.Join(t.TempDir(), "net"), Spec{Orderers: 2, BasePort: 17050, ClusterPorts: true})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(lay.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// 4 nodes: addresses 17050-17053, metrics 17054-17057, cluster 17058-.
	want := []string{"orderer0 127.0.0.1:17050 127.0.0.1:17058", "orderer1 127.0.0.1:17051 127.0.0.1:17059", "peer0.Org1 127.0.0.1:17052 ", "peer0.Org2 127.0.0.1:17053 "}
	for i, n := range loaded.Nodes {
		if got := n.Name + " " + n.Address + " " + n.Cluster; got != want[i] {
			t.Errorf("node %d: %q, want %q", i, got, want[i])
		}
	}
	ch, err := node.LoadChannel(lay.Channel)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range ch.Orderers() {
		if o.Cluster != loaded.Nodes[i].Cluster || o.Address != loaded.Nodes[i].Address {
			t.Errorf("channel orderer %d: %+v, layout %+v", i, o, loaded.Nodes[i])
		}
	}
	if _, err := Generate(t.TempDir(), Spec{Orderers: 2, BasePort: 65536 - 9, ClusterPorts: true}); err == nil || !strings.Contains(err.Error(), "10 ports free") {
		t.Errorf("BasePort too high for the cluster ports: %v", err)
	}
}

// The orderers' chains must agree block by block; a shorter one is a
// prefix of the longest.
func TestVerifierOrderersAgree(t *testing.T) {
	chain := func(hashes ...string) []block {
		var out []block
		for _, h := range hashes {
			out = append(out, block{hash: []byte(h)})
		}
		return out
	}
	v := &verifier{}
	for _, c := range []struct {
		name string
		b    []block
	}{{"o0", chain("g", "a")}, {"o1", chain("g", "a", "b")}, {"o2", nil}, {"o3", chain("g")}} {
		if err := v.addOrderer(c.name, c.b); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if v.refBy != "o1" || len(v.ref) != 3 {
		t.Fatalf("reference chain from %s with %d blocks, want o1's 3", v.refBy, len(v.ref))
	}
	err := v.addOrderer("o4", chain("g", "x"))
	if !errors.Is(err, ErrDisagree) || !strings.Contains(err.Error(), "block 1 has header hash 78 at o4 and 61 at o1") {
		t.Fatalf("a fork: %v, want ErrDisagree naming block 1, o4 and o1", err)
	}
}

// Peers must agree on every code, position by position. A tx id ordered
// twice is VALID at its first position and DUPLICATE_TXID at its second on
// every peer: that is agreement, which a check keyed by tx id had reported
// as a disagreement (CI, TestNetRaftTwoFollowersDown).
func TestVerifierPeersAgree(t *testing.T) {
	valid, dup := byte(api.TxValidationCode_VALID), byte(api.TxValidationCode_DUPLICATE_TXID)
	newV := func() *verifier {
		return &verifier{ref: []block{{}, {ids: []string{"t1", "t2"}}, {ids: []string{"t2", "t3"}}}}
	}
	first := func(v *verifier) {
		v.codBy, v.codes = "p0", make([][]byte, len(v.ref))
		for num, codes := range [][]byte{nil, {valid, valid}, {dup, valid}} {
			if err := v.peerBlock("p0", uint64(num), v.ref[num].ids, codes); err != nil {
				t.Fatal(err)
			}
		}
	}
	v := newV()
	first(v)
	if err := v.peerBlock("p1", 1, []string{"t1", "t2"}, []byte{valid, valid}); err != nil {
		t.Errorf("block 1, same codes: %v", err)
	}
	if err := v.peerBlock("p1", 2, []string{"t2", "t3"}, []byte{dup, valid}); err != nil {
		t.Errorf("block 2, t2 again as DUPLICATE_TXID at both peers: %v", err)
	}
	for _, c := range []struct {
		name  string
		num   uint64
		ids   []string
		codes []byte
		want  string
	}{
		{"code differs", 2, []string{"t2", "t3"}, []byte{valid, valid}, "tx t2 at position 0 of block 2 is VALID at peer p1, DUPLICATE_TXID at peer p0"},
		{"other txs", 1, []string{"t2", "t1"}, []byte{valid, valid}, "peer p1 block 1 holds transactions [t2 t1], the orderers' block 1 holds [t1 t2]"},
		{"codes missing", 1, []string{"t1", "t2"}, []byte{valid}, "peer p1 block 1: 1 codes for 2 transactions"},
		{"beyond orderers", 3, nil, nil, "peer p1 has block 3, beyond every orderer's height 3"},
	} {
		v := newV()
		first(v)
		err := v.peerBlock("p1", c.num, c.ids, c.codes)
		if !errors.Is(err, ErrDisagree) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrDisagree with %q", c.name, err, c.want)
		}
	}
}

// settled is the liveness half of Verify: every node answered and all are
// at the longest chain's height, else an error per node that is not,
// wrapping why.
func TestSettled(t *testing.T) {
	o0 := Node{Name: "orderer0", Role: identity.RoleOrderer}
	p1 := Node{Name: "peer0.Org1", Role: identity.RolePeer}
	p2 := Node{Name: "peer0.Org2", Role: identity.RolePeer}
	down := unanswered(p2, status.Error(codes.Unavailable, "connection refused"))
	for _, c := range []struct {
		name   string
		chains []Chain
		want   []error  // each must be wrapped
		says   []string // each must be in the message
	}{
		{"all at one height", []Chain{{Node: o0, Height: 7}, {Node: p1, Height: 7}, {Node: p2, Height: 7}}, nil, nil},
		{"a peer behind", []Chain{{Node: o0, Height: 7}, {Node: p1, Height: 7}, {Node: p2, Height: 5}},
			[]error{ErrBehind}, []string{"peer peer0.Org2 is at height 5, orderer0 at 7"}},
		{"an orderer behind a peer", []Chain{{Node: o0, Height: 5}, {Node: p1, Height: 7}},
			[]error{ErrBehind}, []string{"orderer orderer0 is at height 5, peer0.Org1 at 7"}},
		{"a peer down", []Chain{{Node: o0, Height: 7}, {Node: p1, Height: 7}, {Node: p2, Err: down}},
			[]error{ErrUnavailable}, []string{"peer peer0.Org2 at", "connection refused"}},
		{"down and behind", []Chain{{Node: o0, Height: 7}, {Node: p1, Height: 6}, {Node: p2, Err: down}},
			[]error{ErrUnavailable, ErrBehind}, []string{"peer0.Org2", "peer peer0.Org1 is at height 6"}},
	} {
		err := settled(c.chains)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want nil", c.name, err)
			}
			continue
		}
		for _, w := range c.want {
			if !errors.Is(err, w) {
				t.Errorf("%s: %v, want it to wrap %v", c.name, err, w)
			}
		}
		for _, s := range c.says {
			if err == nil || !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %v, want it to say %q", c.name, err, s)
			}
		}
	}
}

// unanswered classifies a failed read by its gRPC status code, wrapped or
// not, never by its message.
func TestUnanswered(t *testing.T) {
	n := Node{Name: "peer0.Org1", Role: identity.RolePeer, Address: "127.0.0.1:7051"}
	for _, c := range []struct {
		err  error
		want error
	}{
		{status.Error(codes.Unavailable, "x"), ErrUnavailable},
		{fmt.Errorf("client: block events stream ended: %w", status.Error(codes.Unavailable, "x")), ErrUnavailable},
		{fmt.Errorf("wrapped: %w", status.Error(codes.DeadlineExceeded, "x")), ErrUnavailable},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), ErrUnavailable},
		{fmt.Errorf("wrapped: %w", status.Error(codes.Internal, "reading block 3 from the block store: unavailable")), ErrUnreadable},
		{errors.New("connection refused"), ErrUnreadable},
	} {
		got := unanswered(n, c.err)
		if !errors.Is(got, c.want) || !errors.Is(got, c.err) || !strings.Contains(got.Error(), "peer peer0.Org1 at 127.0.0.1:7051") {
			t.Errorf("unanswered(%v) = %v, want it to wrap %v and the error, and name the node", c.err, got, c.want)
		}
	}
}

// Spec.Memnodes: every peer gets a memory node of its own, whose file
// loads, names the peer its writer and trusts the peer's org CA, whose TLS
// certificate that CA issued, and whose ports come after all the others;
// the peer's file loads with backend memnode pointing at it. Orderers keep
// their backend. The layout loads back with the memory nodes.
func TestGenerateMemnodes(t *testing.T) {
	lay, err := Generate(filepath.Join(t.TempDir(), "net"), Spec{Orgs: 2, PeersPerOrg: 2, BasePort: 17050, Memnodes: true})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := node.LoadChannel(lay.Channel)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := ch.Registry()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(lay.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// 5 nodes: addresses 17050-17054, metrics 17055-17059; then each
	// memory node's address and metrics from 17060.
	want := []string{
		"memnode.peer0.Org1 Org1 peer0.Org1 127.0.0.1:17060 127.0.0.1:17061",
		"memnode.peer1.Org1 Org1 peer1.Org1 127.0.0.1:17062 127.0.0.1:17063",
		"memnode.peer0.Org2 Org2 peer0.Org2 127.0.0.1:17064 127.0.0.1:17065",
		"memnode.peer1.Org2 Org2 peer1.Org2 127.0.0.1:17066 127.0.0.1:17067",
	}
	if len(loaded.Memnodes) != len(want) {
		t.Fatalf("%d memory nodes loaded back, want %d", len(loaded.Memnodes), len(want))
	}
	for i, mn := range loaded.Memnodes {
		if got := strings.Join([]string{mn.Name, mn.Org, mn.Serves, mn.Address, mn.Metrics}, " "); got != want[i] {
			t.Errorf("memory node %d: %q, want %q", i, got, want[i])
		}
		if mn.Kind() != MemnodeKind || mn.Config != lay.Memnodes[i].Config {
			t.Errorf("memory node %s: kind %q, config %s; want %s, %s", mn.Name, mn.Kind(), mn.Config, MemnodeKind, lay.Memnodes[i].Config)
		}
		m, err := node.LoadMemnode(mn.Config)
		if err != nil {
			t.Fatal(err)
		}
		if m.Writer != mn.Serves || m.Listen != mn.Address || m.Metrics != mn.Metrics {
			t.Errorf("memnode file %s: writer %q, listen %s, metrics %s; want %s, %s, %s", mn.Config, m.Writer, m.Listen, m.Metrics, mn.Serves, mn.Address, mn.Metrics)
		}
		orgCA := filepath.Join(lay.Dir, "crypto", mn.Org, "ca.pem")
		if len(m.CAs) != 1 || m.CAs[0] != orgCA {
			t.Errorf("memnode file %s: cas %v, want [%s]", mn.Config, m.CAs, orgCA)
		}
		if m.DataDir != filepath.Join(lay.Dir, "data", mn.Name) {
			t.Errorf("memnode file %s: dataDir %s, want under %s", mn.Config, m.DataDir, filepath.Join(lay.Dir, "data"))
		}
		checkMember(t, reg, mn.Org, certDER(t, m.TLS.Cert), identity.RolePeer)
		if fi, err := os.Stat(m.TLS.Key); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("key %s: %v %v, want mode 0600", m.TLS.Key, fi, err)
		}
		peer, ok := loaded.Node(mn.Serves)
		if !ok || peer.Role != identity.RolePeer {
			t.Fatalf("memory node %s serves %q, not a peer of the layout", mn.Name, mn.Serves)
		}
		n, err := node.LoadNode(peer.Config)
		if err != nil {
			t.Fatal(err)
		}
		if n.StateDB.Backend != "memnode" || n.StateDB.Memnode.Address != mn.Address || len(n.StateDB.Memnode.CAs) != 1 || n.StateDB.Memnode.CAs[0] != orgCA {
			t.Errorf("peer %s: stateDB %+v, want backend memnode at %s trusting %s", peer.Name, n.StateDB, mn.Address, orgCA)
		}
	}
	for _, ln := range loaded.Nodes {
		if ln.Role != identity.RoleOrderer {
			continue
		}
		n, err := node.LoadNode(ln.Config)
		if err != nil {
			t.Fatal(err)
		}
		if n.StateDB.Backend == "memnode" {
			t.Errorf("orderer %s has backend memnode", ln.Name)
		}
	}
	// Without the option: no memory node, and the peers keep the default.
	plain, err := Generate(filepath.Join(t.TempDir(), "net"), Spec{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := plain.Peer("Org1")
	if n, err := node.LoadNode(p.Config); err != nil || n.StateDB.Backend == "memnode" || len(plain.Memnodes) != 0 {
		t.Errorf("without Spec.Memnodes: %d memory nodes, peer backend %v (%v)", len(plain.Memnodes), n, err)
	}
}

// TestGenerateEd25519: Spec.Alg Ed25519 gives the CAs and every signing
// identity (nodes, clients, admins) Ed25519 keys and leaves TLS keys P-256;
// the channel's registry admits them all, and a node or org added later
// follows. An unknown algorithm is refused before anything is written.
func TestGenerateEd25519(t *testing.T) {
	dir := t.TempDir()
	lay, err := Generate(dir, Spec{Alg: identity.Ed25519})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := node.LoadChannel(lay.Channel)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := ch.Registry()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := AddOrderer(lay, "orderer9"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := AddOrg(lay, "Org3"); err != nil {
		t.Fatal(err)
	}
	if alg, err := lay.Alg(); alg != identity.Ed25519 || err != nil {
		t.Errorf("Layout.Alg: %v, %v; want ed25519", alg, err)
	}
	for _, org := range append(lay.Orgs(), OrdererOrg) { // Org3 included
		if _, ok := pemCert(t, filepath.Join(dir, "crypto", org, "ca.pem")).PublicKey.(ed25519.PublicKey); !ok {
			t.Errorf("CA of %s: not an Ed25519 key", org)
		}
	}
	var ids []Client
	for _, n := range lay.Nodes {
		nc, err := node.LoadNode(n.Config)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, Client{Name: n.Name, Org: n.Org, Cert: nc.Identity.Cert, TLSCert: nc.TLS.Cert})
	}
	for _, c := range append(append(ids, lay.Clients...), lay.Admins...) {
		if _, ok := pemCert(t, c.Cert).PublicKey.(ed25519.PublicKey); !ok {
			t.Errorf("%s: signing key %T, want Ed25519", c.Name, pemCert(t, c.Cert).PublicKey)
		}
		if _, ok := pemCert(t, c.TLSCert).PublicKey.(*ecdsa.PublicKey); !ok {
			t.Errorf("%s: TLS key %T, want ECDSA P-256", c.Name, pemCert(t, c.TLSCert).PublicKey)
		}
		if c.Name == "orderer9" || c.Org == "Org3" {
			continue // not in the channel file until its membership update
		}
		if _, err := reg.Member(&api.Identity{Org: c.Org, Cert: certDER(t, c.Cert)}); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	bad := filepath.Join(t.TempDir(), "net")
	if _, err := Generate(bad, Spec{Alg: identity.Ed25519 + 1}); !errors.Is(err, identity.ErrUnknownAlgorithm) {
		t.Errorf("Generate with Alg %d: %v, want identity.ErrUnknownAlgorithm", identity.Ed25519+1, err)
	}
	if _, err := os.Stat(bad); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Generate with an unknown Alg left %s behind (%v)", bad, err)
	}
}

func pemCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	cert, err := x509.ParseCertificate(certDER(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
