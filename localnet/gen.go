package localnet

import (
	"bytes"
	"cmp"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
	"gopkg.in/yaml.v3"
)

// tlsHosts are the SANs of every generated TLS certificate; a node placed
// on a host (Spec.Hosts) has that host too.
var tlsHosts = []string{"127.0.0.1", "localhost"}

// gen writes the files of one network.
type gen struct {
	dir      string
	lay      *Layout
	metrics  []int // metrics ports not yet given to a node
	profile  bool
	join     string // node files' join (AddOrderer)
	channel  string // node files' channel file in the network's directory; "" is channel.yaml
	hosts    map[string]string
	dataRoot string
	stateDB  string             // peers' backend, "" for the default
	alg      identity.Algorithm // of the CAs org creates; a leaf takes its CA's
	// tuneNode and tuneMemnode are Spec.TuneNode and Spec.TuneMemnode.
	tuneNode    func(*node.NodeConfig)
	tuneMemnode func(*node.MemnodeConfig)
}

// dataDir is node name's data directory as its node file names it.
func (g *gen) dataDir(name string) string {
	if g.dataRoot != "" {
		return filepath.Join(g.dataRoot, name)
	}
	return filepath.Join("..", "data", name)
}

// host is where node name is dialled: Spec.Hosts, else 127.0.0.1.
func (g *gen) host(name string) string {
	if h, ok := g.hosts[name]; ok {
		return h
	}
	return "127.0.0.1"
}

// dialAt is the address the others dial node name at on port.
func (g *gen) dialAt(name string, port int) string {
	return net.JoinHostPort(g.host(name), strconv.Itoa(port))
}

// sans are the TLS certificate names of node name.
func (g *gen) sans(name string) []string {
	if h, ok := g.hosts[name]; ok && !slices.Contains(tlsHosts, h) {
		return append(slices.Clone(tlsHosts), h)
	}
	return tlsHosts
}

// org creates the CA of org and writes crypto/<org>/ca.pem and ca-key.pem.
func (g *gen) org(org string) (*identity.CA, error) {
	ca, err := identity.NewCA(org, g.alg)
	if err != nil {
		return nil, fmt.Errorf("localnet: %w", err)
	}
	cert, key, err := ca.MarshalPEM()
	if err != nil {
		return nil, fmt.Errorf("localnet: %w", err)
	}
	d := filepath.Join(g.dir, "crypto", org)
	if err := g.write(filepath.Join(d, "ca.pem"), cert, 0o644); err != nil {
		return nil, err
	}
	return ca, g.write(filepath.Join(d, "ca-key.pem"), key, 0o600)
}

// keys issues a signing identity (of the CA's algorithm, so that a node
// added later to a network follows it) and a TLS certificate for name
// with role and writes them under crypto/<org>/<sub>.
func (g *gen) keys(ca *identity.CA, name, sub string, role identity.Role) error {
	s, err := ca.Issue(name, role, ca.Algorithm())
	if err != nil {
		return fmt.Errorf("localnet: %w", err)
	}
	cert, key, err := s.MarshalPEM()
	if err != nil {
		return fmt.Errorf("localnet: %w", err)
	}
	tcert, tkey, err := ca.IssueTLS(name, role, g.sans(name))
	if err != nil {
		return fmt.Errorf("localnet: %w", err)
	}
	d := filepath.Join(g.dir, "crypto", ca.Org(), sub)
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{"cert.pem", cert, 0o644}, {"key.pem", key, 0o600}, {"tls-cert.pem", tcert, 0o644}, {"tls-key.pem", tkey, 0o600}} {
		if err := g.write(filepath.Join(d, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// node writes the keys and the node file of one peer or orderer; a peer
// with state keeps its state on that memory node (stateDB.backend memnode).
func (g *gen) node(ca *identity.CA, ep node.EndpointConfig, sub string, role identity.Role, state *node.MemnodeClientConfig) error {
	if err := g.keys(ca, ep.Name, sub, role); err != nil {
		return err
	}
	crypto := filepath.Join("..", "crypto", ca.Org(), sub)
	n := &node.NodeConfig{
		Role:     role.String(),
		Name:     ep.Name,
		Org:      ca.Org(),
		Listen:   ep.Address,
		DataDir:  g.dataDir(ep.Name),
		Channel:  filepath.Join("..", cmp.Or(g.channel, "channel.yaml")),
		Identity: node.KeyPair{Cert: filepath.Join(crypto, "cert.pem"), Key: filepath.Join(crypto, "key.pem")},
		TLS:      node.KeyPair{Cert: filepath.Join(crypto, "tls-cert.pem"), Key: filepath.Join(crypto, "tls-key.pem")},
		Metrics:  g.dialAt(ep.Name, g.metrics[0]),
		Profile:  g.profile,
		Join:     g.join,
	}
	if state != nil {
		n.StateDB.Backend, n.StateDB.Memnode = "memnode", *state
	} else if role == identity.RolePeer {
		n.StateDB.Backend = g.stateDB
	}
	g.metrics = g.metrics[1:]
	if g.tuneNode != nil {
		g.tuneNode(n)
	}
	n.EnsureDefaults()
	if err := n.Validate(); err != nil {
		return fmt.Errorf("localnet: the generated node %q is invalid: %w", ep.Name, err)
	}
	path := filepath.Join(g.dir, "nodes", ep.Name+".yaml")
	head := fmt.Sprintf("Node file of %s %q of org %s, written by localnet.Generate.\n# Paths are relative to this file. Fields: docs/config.md.", role, ep.Name, ca.Org())
	if err := g.writeYAML(path, head, n); err != nil {
		return err
	}
	g.lay.Nodes = append(g.lay.Nodes, Node{Name: ep.Name, Org: ca.Org(), Role: role, Address: ep.Address, Metrics: n.Metrics, Cluster: ep.Cluster, Config: path})
	return nil
}

// memnode writes the TLS key pair (crypto/<org>/<sub>/memnode/, issued by
// the peer's org CA) and the file (nodes/memnode.<peer>.yaml) of the
// memory node of peer on ports (address, metrics), and returns the peer's
// side: where it is and the CA to trust it by. The memory node trusts the
// peer's org CA and takes writes from peer only. It is on its peer's host
// unless Spec.Hosts names it.
func (g *gen) memnode(ca *identity.CA, peer, sub string, ports []int) (*node.MemnodeClientConfig, error) {
	name := MemnodeKind + "." + peer
	if _, ok := g.hosts[name]; !ok {
		if h, ok := g.hosts[peer]; ok {
			g.hosts[name] = h
		}
	}
	addr, metrics := g.dialAt(name, ports[0]), g.dialAt(name, ports[1])
	tcert, tkey, err := ca.IssueTLS(name, identity.RolePeer, g.sans(name))
	if err != nil {
		return nil, fmt.Errorf("localnet: %w", err)
	}
	d := filepath.Join(g.dir, "crypto", ca.Org(), sub, MemnodeKind)
	if err := g.write(filepath.Join(d, "tls-cert.pem"), tcert, 0o644); err != nil {
		return nil, err
	}
	if err := g.write(filepath.Join(d, "tls-key.pem"), tkey, 0o600); err != nil {
		return nil, err
	}
	crypto := filepath.Join("..", "crypto", ca.Org(), sub, MemnodeKind)
	orgCA := filepath.Join("..", "crypto", ca.Org(), "ca.pem")
	m := &node.MemnodeConfig{
		Listen:  addr,
		DataDir: g.dataDir(name),
		TLS:     node.KeyPair{Cert: filepath.Join(crypto, "tls-cert.pem"), Key: filepath.Join(crypto, "tls-key.pem")},
		CAs:     []string{orgCA},
		Writer:  peer,
		Metrics: metrics,
	}
	if g.tuneMemnode != nil {
		g.tuneMemnode(m)
	}
	m.EnsureDefaults()
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("localnet: the generated memory node of %q is invalid: %w", peer, err)
	}
	path := filepath.Join(g.dir, "nodes", name+".yaml")
	head := fmt.Sprintf("Memory node of peer %q of org %s (strand memnode start), written by localnet.Generate.\n# Paths are relative to this file. Fields: docs/config.md.", peer, ca.Org())
	if err := g.writeYAML(path, head, m); err != nil {
		return nil, err
	}
	g.lay.Memnodes = append(g.lay.Memnodes, Node{Name: name, Org: ca.Org(), Address: addr, Metrics: metrics, Config: path, Serves: peer})
	return &node.MemnodeClientConfig{Address: addr, CAs: []string{orgCA}}, nil
}

// client writes the keys of a client of the CA's org.
func (g *gen) client(ca *identity.CA, name string) error {
	sub := filepath.Join("clients", name)
	full := name + "." + ca.Org()
	if err := g.keys(ca, full, sub, identity.RoleClient); err != nil {
		return err
	}
	d := filepath.Join(g.dir, "crypto", ca.Org(), sub)
	g.lay.Clients = append(g.lay.Clients, Client{
		Name: full, Org: ca.Org(),
		Cert: filepath.Join(d, "cert.pem"), Key: filepath.Join(d, "key.pem"),
		TLSCert: filepath.Join(d, "tls-cert.pem"), TLSKey: filepath.Join(d, "tls-key.pem"),
	})
	return nil
}

// admin writes the keys of the admin of the CA's org under
// crypto/<org>/admin.
func (g *gen) admin(ca *identity.CA) error {
	full := "admin." + ca.Org()
	if err := g.keys(ca, full, "admin", identity.RoleAdmin); err != nil {
		return err
	}
	d := filepath.Join(g.dir, "crypto", ca.Org(), "admin")
	g.lay.Admins = append(g.lay.Admins, Client{
		Name: full, Org: ca.Org(),
		Cert: filepath.Join(d, "cert.pem"), Key: filepath.Join(d, "key.pem"),
		TLSCert: filepath.Join(d, "tls-cert.pem"), TLSKey: filepath.Join(d, "tls-key.pem"),
	})
	return nil
}

func (g *gen) writeYAML(path, head string, v any) error {
	var b bytes.Buffer
	b.WriteString("# " + head + "\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("localnet: encode %s: %w", path, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("localnet: encode %s: %w", path, err)
	}
	return g.write(path, b.Bytes(), 0o644)
}

func (g *gen) write(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("localnet: %w", err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("localnet: %w", err)
	}
	return nil
}
