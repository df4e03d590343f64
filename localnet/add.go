package localnet

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/strand-ledger/strand/identity"
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
	d := filepath.Join(l.Dir, "crypto", OrdererOrg)
	certPEM, err := os.ReadFile(filepath.Join(d, "ca.pem"))
	if err != nil {
		return Node{}, "", fmt.Errorf("localnet: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(d, "ca-key.pem"))
	if err != nil {
		return Node{}, "", fmt.Errorf("localnet: %w", err)
	}
	ca, err := identity.LoadCA(OrdererOrg, certPEM, keyPEM)
	if err != nil {
		return Node{}, "", fmt.Errorf("localnet: %w", err)
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
