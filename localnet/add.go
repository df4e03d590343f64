package localnet

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
	"github.com/strand-ledger/strand/node"
)

// AddOrderer generates the keys and node file of a new orderer of
// OrdererOrg called name, on free ports, and adds it to the layout (saved),
// so that `net up` starts it. It is not in the channel file: it joins the
// Raft ordering service once a config update adds it, and its node file's
// join names the file that update must be written to (the returned path:
// join-<name>.json in the network's directory), as
//
//	strand channel update --add-orderer NAME --address ADDR --out JOIN
//
// does. It returns the new node and that path.
func AddOrderer(l *Layout, name string) (Node, string, error) {
	if _, ok := l.Node(name); ok {
		return Node{}, "", fmt.Errorf("localnet: the network in %s already has a node %q", l.Dir, name)
	}
	ca, err := loadCA(l.Dir, OrdererOrg)
	if err != nil {
		return Node{}, "", err
	}
	ports, err := allocPorts(0, 2, l.usedPorts())
	if err != nil {
		return Node{}, "", err
	}
	join := filepath.Join(l.Dir, "join-"+name+".json")
	g := &gen{dir: l.Dir, lay: l, metrics: ports[1:], join: filepath.Join("..", filepath.Base(join))}
	ep := node.EndpointConfig{Name: name, Address: "127.0.0.1:" + strconv.Itoa(ports[0])}
	if err := g.node(ca, ep, name, identity.RoleOrderer, nil); err != nil {
		return Node{}, "", err
	}
	if err := l.Save(); err != nil {
		return Node{}, "", err
	}
	n, _ := l.Node(name)
	return n, join, nil
}

// orgName is what an org added by AddOrg may be called: it names a
// directory under crypto/ and its nodes (peer0.<org>).
var orgName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,63}$`)

// AddOrg generates a new org of the network the way Generate does a
// genesis org: its CA (crypto/<org>/ca.pem, ca-key.pem), its admin, one
// client (client0) and one peer (peer0.<org>, signing and TLS keys, free
// ports), whose node file's join names the file the membership update
// that adds the org must be written to (the returned path:
// join-<org>.members in the network's directory), as
//
//	strand channel add-org --org ORG --ca crypto/ORG/ca.pem --out JOIN
//
// does. The peer's state database backend is the network's first
// peer's (peersStateDB). The org is not in the channel file. AddOrg adds the peer, client
// and admin to l but does not save l: the caller saves it once the
// update is in force (a layout whose peer cannot join is of no use). It
// returns the new peer, the join path and the org's CA certificate (PEM).
func AddOrg(l *Layout, org string) (Node, string, []byte, error) {
	if !orgName.MatchString(org) {
		return Node{}, "", nil, fmt.Errorf("localnet: bad org name %q: want a letter, then up to 63 letters, digits or '-'", org)
	}
	if org == OrdererOrg {
		return Node{}, "", nil, fmt.Errorf("localnet: org %q is the network's orderer org", org)
	}
	for _, n := range l.all() {
		if n.Org == org {
			return Node{}, "", nil, fmt.Errorf("localnet: the network in %s already has org %q (node %s)", l.Dir, org, n.Name)
		}
	}
	for _, c := range append(slices.Clone(l.Clients), l.Admins...) {
		if c.Org == org {
			return Node{}, "", nil, fmt.Errorf("localnet: the network in %s already has org %q (identity %s)", l.Dir, org, c.Name)
		}
	}
	ch, err := node.LoadChannel(l.Channel)
	if err != nil {
		return Node{}, "", nil, err
	}
	for _, o := range ch.Orgs {
		if o.ID == org {
			return Node{}, "", nil, fmt.Errorf("localnet: org %q is a genesis org of channel %q (%s)", org, ch.Channel, l.Channel)
		}
	}
	ports, err := allocPorts(0, 2, l.usedPorts())
	if err != nil {
		return Node{}, "", nil, err
	}
	name := "peer0." + org
	join := filepath.Join(l.Dir, "join-"+org+".members")
	alg, err := l.Alg()
	if err != nil {
		return Node{}, "", nil, err
	}
	g := &gen{dir: l.Dir, lay: l, metrics: ports[1:], join: filepath.Join("..", filepath.Base(join)), alg: alg}
	if g.stateDB, err = l.peersStateDB(); err != nil {
		return Node{}, "", nil, err
	}
	ca, err := g.org(org)
	if err != nil {
		return Node{}, "", nil, err
	}
	if err := g.admin(ca); err != nil {
		return Node{}, "", nil, err
	}
	ep := node.EndpointConfig{Name: name, Address: g.dialAt(name, ports[0])}
	if err := g.node(ca, ep, "peer0", identity.RolePeer, nil); err != nil {
		return Node{}, "", nil, err
	}
	if err := g.client(ca, "client0"); err != nil {
		return Node{}, "", nil, err
	}
	caPEM, _, err := ca.MarshalPEM()
	if err != nil {
		return Node{}, "", nil, fmt.Errorf("localnet: %w", err)
	}
	n, _ := l.Node(name)
	return n, join, caPEM, nil
}

// peersStateDB is the state database backend an added org's peer gets:
// that of the network's first peer (Spec.StateDB), or the default where
// that peer keeps its state in a memory node (Spec.Memnodes): AddOrg
// starts no memory node.
func (l *Layout) peersStateDB() (string, error) {
	for _, n := range l.Nodes {
		if n.Role != identity.RolePeer {
			continue
		}
		cfg, err := node.LoadNode(n.Config)
		if err != nil {
			return "", err
		}
		if cfg.StateDB.Backend == backend.Memnode {
			return "", nil
		}
		return cfg.StateDB.Backend, nil
	}
	return "", nil
}

// addedOrgCAs returns the CA certificates (PEM, crypto/<org>/ca.pem) of
// the network's orgs that are not in channel ch's file: orgs AddOrg
// generated, which a membership update added. A client trusts them
// besides the channel file's, to reach those orgs' peers over TLS.
func (l *Layout) addedOrgCAs(ch *node.ChannelConfig) ([][]byte, error) {
	genesis := map[string]bool{}
	for _, o := range ch.Orgs {
		genesis[o.ID] = true
	}
	var out [][]byte
	seen := map[string]bool{}
	for _, n := range l.Nodes {
		if genesis[n.Org] || seen[n.Org] {
			continue
		}
		seen[n.Org] = true
		raw, err := os.ReadFile(filepath.Join(l.Dir, "crypto", n.Org, "ca.pem"))
		if err != nil {
			return nil, fmt.Errorf("localnet: CA of org %s, which is not in the channel file: %w", n.Org, err)
		}
		out = append(out, raw)
	}
	return out, nil
}
