package localnet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/strand-ledger/strand/identity"
)

// LayoutFile is the name of the file, in a network's directory, that
// Generate writes its Layout to and Load reads it back from.
const LayoutFile = "layout.json"

// ErrNoNetwork is returned by Load for a directory without a layout file.
var ErrNoNetwork = errors.New("localnet: no network")

// layoutFile is LayoutFile's content: paths relative to the directory, so
// that the directory can be moved.
type layoutFile struct {
	Channel string `json:"channel"`
	// Channels are the channel files AddChannel added (ordered by the
	// network's orderers, served by every peer).
	Channels []string     `json:"channels,omitempty"`
	Nodes    []nodeFile   `json:"nodes"`
	Clients  []clientFile `json:"clients"`
	Admins   []clientFile `json:"admins,omitempty"`
	// Memnodes are the memory nodes (role "memnode", serves: their peer).
	Memnodes []nodeFile `json:"memnodes,omitempty"`
	// Computes are the compute nodes (role "compute", serves: their
	// primary peer).
	Computes []nodeFile `json:"computes,omitempty"`
}

type nodeFile struct {
	Name    string `json:"name"`
	Org     string `json:"org"`
	Role    string `json:"role"`
	Address string `json:"address"`
	Metrics string `json:"metrics,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	Config  string `json:"config"`
	Serves  string `json:"serves,omitempty"`
}

type clientFile struct {
	Name    string `json:"name"`
	Org     string `json:"org"`
	Cert    string `json:"cert"`
	Key     string `json:"key"`
	TLSCert string `json:"tlsCert"`
	TLSKey  string `json:"tlsKey"`
}

// Save writes the layout to LayoutFile in l.Dir.
func (l *Layout) Save() error {
	rel := func(p string) string {
		if r, err := filepath.Rel(l.Dir, p); err == nil {
			return r
		}
		return p
	}
	f := layoutFile{Channel: rel(l.Channel)}
	for _, c := range l.Channels {
		f.Channels = append(f.Channels, rel(c))
	}
	for _, n := range l.Nodes {
		f.Nodes = append(f.Nodes, nodeFile{Name: n.Name, Org: n.Org, Role: n.Role.String(), Address: n.Address, Metrics: n.Metrics, Cluster: n.Cluster, Config: rel(n.Config)})
	}
	for _, c := range l.Clients {
		f.Clients = append(f.Clients, clientFile{Name: c.Name, Org: c.Org,
			Cert: rel(c.Cert), Key: rel(c.Key), TLSCert: rel(c.TLSCert), TLSKey: rel(c.TLSKey)})
	}
	for _, c := range l.Admins {
		f.Admins = append(f.Admins, clientFile{Name: c.Name, Org: c.Org,
			Cert: rel(c.Cert), Key: rel(c.Key), TLSCert: rel(c.TLSCert), TLSKey: rel(c.TLSKey)})
	}
	for _, n := range l.Memnodes {
		f.Memnodes = append(f.Memnodes, nodeFile{Name: n.Name, Org: n.Org, Role: MemnodeKind, Address: n.Address, Metrics: n.Metrics, Config: rel(n.Config), Serves: n.Serves})
	}
	for _, n := range l.Computes {
		f.Computes = append(f.Computes, nodeFile{Name: n.Name, Org: n.Org, Role: ComputeKind, Address: n.Address, Metrics: n.Metrics, Config: rel(n.Config), Serves: n.Primary})
	}
	raw, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("localnet: encode layout: %w", err)
	}
	g := &gen{dir: l.Dir}
	return g.write(filepath.Join(l.Dir, LayoutFile), append(raw, '\n'), 0o644)
}

// Load reads the layout of the network in dir, or, if dir is a file, that
// file: a connection profile, in LayoutFile's format, for a network that
// `net up` did not start (its relative paths are relative to the file's
// directory; node configs are needed only to start nodes). A directory
// without LayoutFile is reported with ErrNoNetwork; an unknown field is an
// error naming it.
func Load(dir string) (*Layout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localnet: %w", err)
	}
	path := filepath.Join(abs, LayoutFile)
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: %s does not exist (want a directory `net up` made, or a connection profile file)", ErrNoNetwork, dir)
	case err == nil && !fi.IsDir():
		path, abs = abs, filepath.Dir(abs)
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s (no %s)", ErrNoNetwork, dir, LayoutFile)
	}
	if err != nil {
		return nil, fmt.Errorf("localnet: %w", err)
	}
	var f layoutFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("localnet: %s: %w (fields: channel, channels, nodes [name, org, role, address, metrics, cluster, config], memnodes and computes [name, org, role, address, metrics, config, serves], clients and admins [name, org, cert, key, tlsCert, tlsKey])", path, err)
	}
	res := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(abs, p)
	}
	l := &Layout{Dir: abs, Channel: res(f.Channel)}
	for _, c := range f.Channels {
		l.Channels = append(l.Channels, res(c))
	}
	for _, n := range f.Nodes {
		role, err := identity.ParseRole(n.Role)
		if err != nil || (role != identity.RolePeer && role != identity.RoleOrderer) {
			return nil, fmt.Errorf("localnet: %s: node %q has role %q, want peer or orderer", path, n.Name, n.Role)
		}
		l.Nodes = append(l.Nodes, Node{Name: n.Name, Org: n.Org, Role: role, Address: n.Address, Metrics: n.Metrics, Cluster: n.Cluster, Config: res(n.Config)})
	}
	for _, n := range f.Memnodes {
		if n.Role != MemnodeKind || n.Serves == "" {
			return nil, fmt.Errorf("localnet: %s: memory node %q has role %q and serves %q, want role %s and the peer it serves", path, n.Name, n.Role, n.Serves, MemnodeKind)
		}
		if p, ok := l.Node(n.Serves); !ok || p.Role != identity.RolePeer {
			return nil, fmt.Errorf("localnet: %s: memory node %q serves %q, which is not a peer of the network", path, n.Name, n.Serves)
		}
		l.Memnodes = append(l.Memnodes, Node{Name: n.Name, Org: n.Org, Address: n.Address, Metrics: n.Metrics, Config: res(n.Config), Serves: n.Serves})
	}
	for _, n := range f.Computes {
		if n.Role != ComputeKind || n.Serves == "" {
			return nil, fmt.Errorf("localnet: %s: compute node %q has role %q and serves %q, want role %s and the peer whose pool it joins", path, n.Name, n.Role, n.Serves, ComputeKind)
		}
		if p, ok := l.Node(n.Serves); !ok || p.Role != identity.RolePeer {
			return nil, fmt.Errorf("localnet: %s: compute node %q serves %q, which is not a peer of the network", path, n.Name, n.Serves)
		}
		l.Computes = append(l.Computes, Node{Name: n.Name, Org: n.Org, Address: n.Address, Metrics: n.Metrics, Config: res(n.Config), Primary: n.Serves})
	}
	for _, c := range f.Clients {
		l.Clients = append(l.Clients, Client{Name: c.Name, Org: c.Org,
			Cert: res(c.Cert), Key: res(c.Key), TLSCert: res(c.TLSCert), TLSKey: res(c.TLSKey)})
	}
	for _, c := range f.Admins {
		l.Admins = append(l.Admins, Client{Name: c.Name, Org: c.Org,
			Cert: res(c.Cert), Key: res(c.Key), TLSCert: res(c.TLSCert), TLSKey: res(c.TLSKey)})
	}
	if len(l.Nodes) == 0 {
		return nil, fmt.Errorf("localnet: %s lists no node", path)
	}
	if l.Membership, err = loadMembership(abs); err != nil {
		return nil, err
	}
	return l, nil
}

// Orgs returns the IDs of the orgs that have peers, sorted.
func (l *Layout) Orgs() []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range l.Nodes {
		if n.Role == identity.RolePeer && !seen[n.Org] {
			seen[n.Org] = true
			out = append(out, n.Org)
		}
	}
	sort.Strings(out)
	return out
}

// Node returns the node called name.
func (l *Layout) Node(name string) (Node, bool) {
	for _, n := range l.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// Peer returns the first peer of org; an unknown org is an error that
// lists the orgs.
func (l *Layout) Peer(org string) (Node, error) {
	for _, n := range l.Nodes {
		if n.Org == org && n.Role == identity.RolePeer {
			return n, nil
		}
	}
	return Node{}, fmt.Errorf("localnet: org %q has no peer in the network in %s: want one of %s", org, l.Dir, strings.Join(l.Orgs(), ", "))
}

// Admin returns the admin identity of org; a network generated before
// admins were (or an unknown org) is an error that says so.
func (l *Layout) Admin(org string) (Client, error) {
	var orgs []string
	for _, c := range l.Admins {
		if c.Org == org {
			return c, nil
		}
		orgs = append(orgs, c.Org)
	}
	if len(orgs) == 0 {
		return Client{}, fmt.Errorf("localnet: the network in %s has no admin identities (generated by an older strand): generate it again", l.Dir)
	}
	return Client{}, fmt.Errorf("localnet: org %q has no admin in the network in %s: want one of %s", org, l.Dir, strings.Join(orgs, ", "))
}

// Client returns the first client identity of org.
func (l *Layout) Client(org string) (Client, error) {
	for _, c := range l.Clients {
		if c.Org == org {
			return c, nil
		}
	}
	return Client{}, fmt.Errorf("localnet: org %q has no client identity in the network in %s: want one of %s", org, l.Dir, strings.Join(l.Orgs(), ", "))
}
