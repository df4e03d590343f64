package localnet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

// ComputeKind is the Kind of a compute node.
const ComputeKind = "compute"

// MaxComputePerPeer bounds the compute nodes of one peer.
const MaxComputePerPeer = 64

// ErrNoMemnode: compute nodes were asked for a peer without a memory node.
var ErrNoMemnode = errors.New("localnet: compute nodes need their primary's memory node")

// ComputesOf returns the compute nodes of peer, in layout order.
func (l *Layout) ComputesOf(peer string) []Node {
	var out []Node
	for _, c := range l.Computes {
		if c.Primary == peer {
			out = append(out, c)
		}
	}
	return out
}

// memnodeOf returns the memory node of peer.
func (l *Layout) memnodeOf(peer string) (Node, error) {
	for _, m := range l.Memnodes {
		if m.Serves == peer {
			return m, nil
		}
	}
	return Node{}, fmt.Errorf("%w: peer %s of the network in %s has none (compute nodes read their primary's state there): generate the network with --memnodes (Spec.Memnodes)",
		ErrNoMemnode, peer, l.Dir)
}

// AddCompute generates the keys (a peer identity and TLS key pair of the
// peer's org, under crypto/<org>/compute/<name>/) and the file
// (nodes/<name>.yaml) of a new compute node of peer, named
// compute<i>.<peer> with the lowest free i, on two free ports, and adds it
// to the layout (saved), so that Up starts it. The peer must have a
// memory node (Spec.Memnodes).
func AddCompute(l *Layout, peer string) (Node, error) {
	p, ok := l.Node(peer)
	if !ok || p.Role != identity.RolePeer {
		return Node{}, fmt.Errorf("localnet: %q is not a peer of the network in %s: want one of %s", peer, l.Dir, strings.Join(l.peers(), ", "))
	}
	mem, err := l.memnodeOf(peer)
	if err != nil {
		return Node{}, err
	}
	name := ""
	for i := 0; name == ""; i++ {
		if candidate := fmt.Sprintf("compute%d.%s", i, peer); !slices.ContainsFunc(l.Computes, func(c Node) bool { return c.Name == candidate }) {
			name = candidate
		}
	}
	if len(l.ComputesOf(peer)) >= MaxComputePerPeer {
		return Node{}, fmt.Errorf("localnet: peer %s already has %d compute nodes, the most it may have", peer, MaxComputePerPeer)
	}
	d := filepath.Join(l.Dir, "crypto", p.Org)
	certPEM, err := os.ReadFile(filepath.Join(d, "ca.pem"))
	if err != nil {
		return Node{}, fmt.Errorf("localnet: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(d, "ca-key.pem"))
	if err != nil {
		return Node{}, fmt.Errorf("localnet: %w", err)
	}
	ca, err := identity.LoadCA(p.Org, certPEM, keyPEM)
	if err != nil {
		return Node{}, fmt.Errorf("localnet: %w", err)
	}
	ports, err := allocPorts(0, 2, l.usedPorts())
	if err != nil {
		return Node{}, err
	}
	g := &gen{dir: l.Dir, lay: l}
	n, err := g.compute(ca, name, peer, mem.Address, "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1]))
	if err != nil {
		return Node{}, err
	}
	return n, l.Save()
}

// computes gives every peer generated so far n compute nodes, on free
// ports.
func (g *gen) computes(n int) error {
	if n == 0 {
		return nil
	}
	cas := map[string]*identity.CA{}
	for _, p := range g.lay.Nodes {
		if p.Role != identity.RolePeer {
			continue
		}
		if cas[p.Org] == nil {
			d := filepath.Join(g.dir, "crypto", p.Org)
			certPEM, err := os.ReadFile(filepath.Join(d, "ca.pem"))
			if err != nil {
				return fmt.Errorf("localnet: %w", err)
			}
			keyPEM, err := os.ReadFile(filepath.Join(d, "ca-key.pem"))
			if err != nil {
				return fmt.Errorf("localnet: %w", err)
			}
			if cas[p.Org], err = identity.LoadCA(p.Org, certPEM, keyPEM); err != nil {
				return fmt.Errorf("localnet: %w", err)
			}
		}
		mem, err := g.lay.memnodeOf(p.Name)
		if err != nil {
			return err
		}
		ports, err := allocPorts(0, 2*n, g.lay.usedPorts())
		if err != nil {
			return err
		}
		for i := range n {
			addr, metrics := "127.0.0.1:"+strconv.Itoa(ports[2*i]), "127.0.0.1:"+strconv.Itoa(ports[2*i+1])
			if _, err := g.compute(cas[p.Org], fmt.Sprintf("compute%d.%s", i, p.Name), p.Name, mem.Address, addr, metrics); err != nil {
				return err
			}
		}
	}
	return nil
}

// compute writes the keys and file of compute node name of peer, which
// reads the memory node at memAddr, and adds it to the layout.
func (g *gen) compute(ca *identity.CA, name, peer, memAddr, addr, metrics string) (Node, error) {
	sub := filepath.Join(ComputeKind, name)
	if err := g.keys(ca, name, sub, identity.RolePeer); err != nil {
		return Node{}, err
	}
	crypto := filepath.Join("..", "crypto", ca.Org(), sub)
	orgCA := filepath.Join("..", "crypto", ca.Org(), "ca.pem")
	c := &node.ComputeConfig{
		Name: name, Org: ca.Org(), Listen: addr, Channel: filepath.Join("..", "channel.yaml"), Primary: peer,
		Identity: node.KeyPair{Cert: filepath.Join(crypto, "cert.pem"), Key: filepath.Join(crypto, "key.pem")},
		TLS:      node.KeyPair{Cert: filepath.Join(crypto, "tls-cert.pem"), Key: filepath.Join(crypto, "tls-key.pem")},
		Memnode:  node.MemnodeClientConfig{Address: memAddr, CAs: []string{orgCA}},
		Metrics:  metrics,
	}
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		return Node{}, fmt.Errorf("localnet: the generated compute node %q is invalid: %w", name, err)
	}
	path := filepath.Join(g.dir, "nodes", name+".yaml")
	head := fmt.Sprintf("Compute node %q of peer %q of org %s (strand compute start), written by localnet.\n# Paths are relative to this file. Fields: docs/config.md.", name, peer, ca.Org())
	if err := g.writeYAML(path, head, c); err != nil {
		return Node{}, err
	}
	n := Node{Name: name, Org: ca.Org(), Address: addr, Metrics: metrics, Config: path, Primary: peer}
	g.lay.Computes = append(g.lay.Computes, n)
	return n, nil
}

// RemoveCompute stops compute node name (SIGTERM, then SIGKILL after
// timeout) and removes it and its files from the layout (saved).
func RemoveCompute(l *Layout, name string, timeout time.Duration) (Proc, error) {
	i := slices.IndexFunc(l.Computes, func(c Node) bool { return c.Name == name })
	if i < 0 {
		return Proc{}, fmt.Errorf("localnet: the network in %s has no compute node %q", l.Dir, name)
	}
	n := l.Computes[i]
	p := l.stop([]Node{n}, timeout)[0]
	if p.err != nil {
		return p, p.err
	}
	l.Computes = slices.Delete(l.Computes, i, i+1)
	if err := l.Save(); err != nil {
		return p, err
	}
	errs := []error{os.Remove(n.Config), os.RemoveAll(filepath.Join(l.Dir, "crypto", n.Org, ComputeKind, name))}
	return p, errors.Join(errs...)
}

// Scale gives peer exactly n compute nodes: it adds and starts the missing
// ones (AddCompute, then Up, which starts every node not running), or
// stops and removes those with the highest numbers. It returns the procs
// it started or stopped.
func Scale(l *Layout, peer string, n int, up UpOptions, stopTimeout time.Duration) ([]Proc, error) {
	if n < 0 || n > MaxComputePerPeer {
		return nil, fmt.Errorf("localnet: %d compute nodes for %s: want 0 to %d", n, peer, MaxComputePerPeer)
	}
	have := l.ComputesOf(peer)
	if n < len(have) {
		slices.SortFunc(have, func(a, b Node) int { return computeIndex(b.Name) - computeIndex(a.Name) })
		var out []Proc
		for _, c := range have[:len(have)-n] {
			p, err := RemoveCompute(l, c.Name, stopTimeout)
			out = append(out, p)
			if err != nil {
				return out, err
			}
		}
		return out, nil
	}
	var added []string
	for range n - len(have) {
		c, err := AddCompute(l, peer)
		if err != nil {
			return nil, err
		}
		added = append(added, c.Name)
	}
	procs, err := Up(l, up)
	var out []Proc
	for _, p := range procs {
		if slices.Contains(added, p.Name) {
			out = append(out, p)
		}
	}
	return out, err
}

// computeIndex is i of compute<i>.<peer>.
func computeIndex(name string) int {
	head, _, _ := strings.Cut(strings.TrimPrefix(name, "compute"), ".")
	i, _ := strconv.Atoi(head)
	return i
}

// peers returns the names of the network's peers.
func (l *Layout) peers() []string {
	var out []string
	for _, n := range l.Nodes {
		if n.Role == identity.RolePeer {
			out = append(out, n.Name)
		}
	}
	return out
}
