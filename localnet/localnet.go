package localnet

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

// OrdererOrg is the ID of the org of the generated orderers.
const OrdererOrg = "OrdererOrg"

// Spec describes the network to generate. Zero fields mean the defaults.
type Spec struct {
	// Orgs is the number of peer orgs, Org1..OrgN. Default 2.
	Orgs int
	// PeersPerOrg is the number of peers of each peer org. Default 1.
	PeersPerOrg int
	// Orderers is the number of orderers of OrdererOrg. Default 1.
	Orderers int
	// Channels is the number of channels every peer process serves and
	// the network's orderers order: the network's channel (demo) and, for
	// each one more, a channel AddChannel adds (demo2, demo3, ...), each
	// its own ledger and, with several orderers, its own Raft group on the
	// same orderer processes. Default 1. More than one cannot go with Memnodes or Compute.
	Channels int
	// ClientsPerOrg is the number of client identities of each peer org,
	// client0..clientN-1 (benchmarks give each client its own). Default 1.
	ClientsPerOrg int
	// BasePort is the first port; nodes take consecutive ports from it,
	// orderers first, then their metrics endpoints in the same order.
	// Default 0: free ports that 127.0.0.1 lends.
	BasePort int
	// Profile serves Go's profiles (/debug/pprof/) on every node's metrics
	// address.
	Profile bool
	// Contracts of the channel. Default DefaultContracts, each with the policy AND over the peer role of every peer org.
	Contracts []ContractSpec
	// Batch limits of the ordering service; zero fields take
	// node.ChannelConfig's defaults.
	Batch node.BatchConfig
	// ClusterPorts gives every orderer a cluster address of its own (a
	// port after the metrics ports; Node.Cluster), where the other
	// orderers dial it for Raft. Nothing listens there: the caller puts a
	// forwarder to Node.Address there, such as an internal/faultproxy
	// that can cut the orderer off from the cluster while peers and
	// clients still reach it. For fault-injection tests.
	ClusterPorts bool
	// Readers is the channel's read policy (node.ChannelConfig.Readers);
	// empty means every member of the channel's orgs.
	Readers string
	// Hosts places nodes on other machines: node name (orderer0,
	// peer0.Org1, memnode.peer0.Org1) → the host, a DNS name or an IP
	// address, that the node listens on and the others dial it at; it goes
	// into the node's TLS certificate beside 127.0.0.1 and localhost. (A
	// node whose name resolves elsewhere, behind NAT, listens on 0.0.0.0
	// after an edit of its node file: docs/deploy.md.) A memory node not
	// named goes with its peer; nodes not named stay on 127.0.0.1. Needs
	// BasePort: the ports free on other machines cannot be found here.
	Hosts map[string]string
	// StateDB is the peers' state database backend (stateDB.backend in
	// their node files); empty means node's default, pebble. Memnodes
	// sets it to memnode.
	StateDB string
	// Alg is the algorithm of the CAs' and the signing identities' keys
	// (nodes, clients, admins); zero is ECDSA P-256. TLS keys stay P-256
	// (identity.IssueTLS): a handshake per connection, not per transaction.
	Alg identity.Algorithm
	// DataRoot, if set, is an absolute directory under which each node's
	// data directory is written (DataRoot/<name>), such as
	// /var/lib/strand on a server; empty: <dir>/data/<name>.
	DataRoot string
	// Wasm runs contracts of the channel as WebAssembly modules instead of
	// built in: name to module code. Generate writes each module to
	// contracts/<name>.wasm and names it in the channel file with its
	// hash (runtime: wasm). Every name must be a contract of the channel.
	Wasm map[string][]byte
	// External runs contracts of the channel on external contract
	// servers: name to connection package (contract/external.Package,
	// encoded). Generate writes each to contracts/<name>.external.json
	// and names it in the channel file with its hash (runtime: external).
	External map[string][]byte
	// Memnodes gives every peer a memory node of its own (one memory node
	// serves one writing peer): nodes/memnode.<peer>.yaml, its TLS key
	// pair issued by the peer's org CA, and the peer's stateDB.backend
	// memnode pointing at it. Its two ports (address, metrics) come after
	// all the others.
	Memnodes bool
	// TuneNode and TuneMemnode, if set, adjust every generated node file
	// (peers and orderers) and every memory node file before it is
	// validated and written: benchmarks size state databases, caches and
	// memory tiers through them. A change that makes a file invalid
	// fails Generate with the file's error.
	TuneNode    func(*node.NodeConfig)
	TuneMemnode func(*node.MemnodeConfig)
	// Compute gives every peer this many compute nodes (strand compute
	// start): endorsers over the peer's memory node that join the peer's
	// endorsement pool (FlexChain's logical peer). It needs Memnodes.
	// They take free ports, whatever BasePort says. 0 to
	// MaxComputePerPeer.
	Compute int
}

// ContractSpec is one contract of the channel and its endorsement policy.
type ContractSpec struct{ Name, Policy string }

// DefaultContracts are the contracts of a Spec without Contracts.
var DefaultContracts = []string{"smallbank", "kv", "fixedasset", "simple", "kmeans", "scm", "empty"}

// Layout says what Generate wrote. Paths are absolute.
type Layout struct {
	Dir     string
	Channel string // channel.yaml
	// Channels are the files of the channels AddChannel added
	// (channel-<id>.yaml), which every peer serves and every orderer
	// orders beside Channel.
	Channels []string
	Nodes    []Node
	Clients  []Client
	// Admins holds one admin identity per org (RoleAdmin), OrdererOrg's
	// included: they sign channel config updates and call the orderers'
	// Admin service.
	Admins []Client
	// Membership is the channel's orderer set as of the latest config
	// update recorded in MembershipFile; nil without one (the channel
	// file's orderers are the members).
	Membership *Membership
	// Memnodes are the memory nodes of Spec.Memnodes, one per peer (Serves
	// names it), in the order of their peers.
	Memnodes []Node
	// Computes are the compute nodes of Spec.Compute and Scale (Primary
	// names their peer).
	Computes []Node
}

// Node is one generated peer, orderer or memory node.
type Node struct {
	Name    string
	Org     string
	Role    identity.Role // RolePeer or RoleOrderer; zero for a memory node
	Address string        // host:port it listens on and is dialled at
	Metrics string        // host:port of its Prometheus /metrics endpoint
	Cluster string        // orderer with Spec.ClusterPorts: where the other orderers dial it
	Config  string        // its node file, for node.LoadNode (a memory node's: node.LoadMemnode)
	Serves  string        // a memory node: the peer whose state it keeps; empty otherwise
	Primary string        // a compute node: the peer whose pool it joins; empty otherwise
}

// MemnodeKind is the Kind of a memory node.
const MemnodeKind = "memnode"

// Kind is what the node runs as: "peer", "orderer", MemnodeKind or
// ComputeKind; its process is `<strand> <kind> start --config <Config>`.
func (n Node) Kind() string {
	if n.Primary != "" {
		return ComputeKind
	}
	if n.Serves != "" {
		return MemnodeKind
	}
	return n.Role.String()
}

// Client is one generated client identity: a signing key pair and a TLS key
// pair of RoleClient (RoleAdmin in Layout.Admins).
type Client struct {
	Name, Org       string
	Cert, Key       string
	TLSCert, TLSKey string
}

// ErrNotEmpty is returned when Generate's directory already holds files.
var ErrNotEmpty = errors.New("localnet: directory not empty")

func (s *Spec) ensureDefaults() {
	if s.Orgs == 0 {
		s.Orgs = 2
	}
	if s.PeersPerOrg == 0 {
		s.PeersPerOrg = 1
	}
	if s.Orderers == 0 {
		s.Orderers = 1
	}
	if s.ClientsPerOrg == 0 {
		s.ClientsPerOrg = 1
	}
	if s.Channels == 0 {
		s.Channels = 1
	}
}

func (s *Spec) nodes() int { return s.Orderers + s.Orgs*s.PeersPerOrg }

// ports is the number of ports the network takes: an address and a
// metrics address per node, and a cluster address per orderer with
// ClusterPorts.
func (s *Spec) ports() int {
	n := 2 * s.nodes()
	if s.ClusterPorts {
		n += s.Orderers
	}
	return n + 2*s.memnodes()
}

// memnodes is the number of memory nodes: one per peer with Memnodes.
func (s *Spec) memnodes() int {
	if s.Memnodes {
		return s.Orgs * s.PeersPerOrg
	}
	return 0
}

// ensureContracts fills in the default contracts; call it after validate.
func (s *Spec) ensureContracts() {
	if len(s.Contracts) == 0 {
		terms := make([]string, s.Orgs)
		for i := range terms {
			terms[i] = fmt.Sprintf("'Org%d.peer'", i+1)
		}
		pol := "AND(" + strings.Join(terms, ",") + ")"
		for _, name := range DefaultContracts {
			s.Contracts = append(s.Contracts, ContractSpec{Name: name, Policy: pol})
		}
	}
}

func (s *Spec) validate() error {
	switch {
	case s.Orgs < 1 || s.Orgs > 64:
		return fmt.Errorf("localnet: Spec.Orgs = %d: want 1 to 64 (0 means 2)", s.Orgs)
	case s.PeersPerOrg < 1 || s.PeersPerOrg > 64:
		return fmt.Errorf("localnet: Spec.PeersPerOrg = %d: want 1 to 64 (0 means 1)", s.PeersPerOrg)
	case s.Orderers < 1 || s.Orderers > 64:
		return fmt.Errorf("localnet: Spec.Orderers = %d: want 1 to 64 (0 means 1)", s.Orderers)
	case s.ClientsPerOrg < 1 || s.ClientsPerOrg > 1024:
		return fmt.Errorf("localnet: Spec.ClientsPerOrg = %d: want 1 to 1024 (0 means 1)", s.ClientsPerOrg)
	case s.Compute < 0 || s.Compute > MaxComputePerPeer:
		return fmt.Errorf("localnet: Spec.Compute = %d: want 0 to %d compute nodes per peer", s.Compute, MaxComputePerPeer)
	case s.Channels < 1 || s.Channels > 64:
		return fmt.Errorf("localnet: Spec.Channels = %d: want 1 to 64 (0 means 1)", s.Channels)
	case s.Channels > 1 && (s.Memnodes || s.Compute > 0):
		return fmt.Errorf("localnet: Spec.Channels = %d with memory or compute nodes: a memory node keeps one channel's state, so a peer with several channels keeps them in its own state databases", s.Channels)
	case s.Compute > 0 && !s.Memnodes:
		return fmt.Errorf("%w: Spec.Compute = %d without Spec.Memnodes: give the peers memory nodes (--memnodes) for their compute nodes to read", ErrNoMemnode, s.Compute)
	case s.Alg != identity.ECDSAP256 && s.Alg != identity.Ed25519:
		return fmt.Errorf("localnet: Spec.Alg = %v: %w", s.Alg, identity.ErrUnknownAlgorithm)
	case s.BasePort < 0 || s.BasePort+s.ports() > 65536:
		return fmt.Errorf("localnet: Spec.BasePort = %d: want 0 (free ports) or a port with %d ports free above it, at most 65535", s.BasePort, s.ports())
	}
	if s.DataRoot != "" && !filepath.IsAbs(s.DataRoot) {
		return fmt.Errorf("localnet: data root %q: want an absolute directory, such as /var/lib/strand", s.DataRoot)
	}
	return s.validateHosts()
}

// names lists the nodes the spec generates, orderers first.
func (s *Spec) names() []string {
	var out []string
	for i := range s.Orderers {
		out = append(out, fmt.Sprintf("orderer%d", i))
	}
	for o := 1; o <= s.Orgs; o++ {
		for i := range s.PeersPerOrg {
			peer := fmt.Sprintf("peer%d.Org%d", i, o)
			out = append(out, peer)
			if s.Memnodes {
				out = append(out, MemnodeKind+"."+peer)
			}
		}
	}
	return out
}

func (s *Spec) validateHosts() error {
	if len(s.Hosts) == 0 {
		return nil
	}
	names := s.names()
	for name, host := range s.Hosts {
		if !slices.Contains(names, name) {
			return fmt.Errorf("localnet: a host is given for node %q, which this network does not have; its nodes: %s", name, strings.Join(names, ", "))
		}
		if why := badHost(host); why != "" {
			return fmt.Errorf("localnet: host %q of node %s: %s", host, name, why)
		}
	}
	if s.BasePort == 0 {
		return fmt.Errorf("localnet: hosts place nodes on other machines, whose free ports cannot be found from here: give a base port too (such as 7050)")
	}
	return nil
}

// badHost says why host cannot name a machine, or "" if it can: an IP
// address or a DNS name (RFC 1123 labels), without a port.
func badHost(host string) string {
	if net.ParseIP(host) != nil {
		return ""
	}
	if len(host) == 0 || len(host) > 253 {
		return "want an IP address or a DNS name of 1 to 253 characters"
	}
	for _, label := range strings.Split(host, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "want an IP address or a DNS name of dot-separated labels of 1 to 63 letters, digits and inner hyphens (no port)"
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Sprintf("%q is not allowed in a host name; want an IP address or a DNS name (no port)", c)
			}
		}
	}
	return ""
}

// Generate writes a network described by spec into dir, which must not
// exist or be empty, and returns its layout.
func Generate(dir string, spec Spec) (*Layout, error) {
	spec.ensureDefaults()
	if err := spec.validate(); err != nil {
		return nil, err
	}
	spec.ensureContracts()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localnet: %w", err)
	}
	switch ents, err := os.ReadDir(dir); {
	case err == nil && len(ents) > 0:
		return nil, fmt.Errorf("%w: %s holds %d entries (first %q); generate into a new or empty directory", ErrNotEmpty, dir, len(ents), ents[0].Name())
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("localnet: %w", err)
	}
	ports, err := allocPorts(spec.BasePort, spec.ports())
	if err != nil {
		return nil, err
	}
	g := &gen{dir: dir, lay: &Layout{Dir: dir, Channel: filepath.Join(dir, "channel.yaml")}, profile: spec.Profile,
		tuneNode: spec.TuneNode, tuneMemnode: spec.TuneMemnode,
		metrics: ports[spec.nodes() : 2*spec.nodes()], hosts: maps.Clone(spec.Hosts), dataRoot: spec.DataRoot, stateDB: spec.StateDB, alg: spec.Alg}
	cluster := ports[2*spec.nodes() : len(ports)-2*spec.memnodes()]
	mem := ports[len(ports)-2*spec.memnodes():]
	ports = ports[:spec.nodes()]
	ch := &node.ChannelConfig{Channel: "demo", Batch: spec.Batch, Format: int(api.FormatLatest), Readers: spec.Readers}
	for _, c := range spec.Contracts {
		ch.Contracts = append(ch.Contracts, node.ContractConfig{Name: c.Name, Policy: c.Policy})
	}
	if err := writeWasm(dir, ch, spec.Wasm); err != nil {
		return nil, err
	}
	if err := writeExternal(dir, ch, spec.External); err != nil {
		return nil, err
	}
	next := func(name string) string { p := ports[0]; ports = ports[1:]; return g.dialAt(name, p) }
	oc, err := g.org(OrdererOrg)
	if err != nil {
		return nil, err
	}
	if err := g.admin(oc); err != nil {
		return nil, err
	}
	ordOrg := node.OrgConfig{ID: OrdererOrg, CA: "crypto/" + OrdererOrg + "/ca.pem"}
	for i := range spec.Orderers {
		ep := node.EndpointConfig{Name: fmt.Sprintf("orderer%d", i)}
		ep.Address = next(ep.Name)
		if spec.ClusterPorts {
			ep.Cluster = "127.0.0.1:" + strconv.Itoa(cluster[i])
		}
		if err := g.node(oc, ep, fmt.Sprintf("orderer%d", i), identity.RoleOrderer, nil); err != nil {
			return nil, err
		}
		ordOrg.Orderers = append(ordOrg.Orderers, ep)
	}
	for o := 1; o <= spec.Orgs; o++ {
		id := fmt.Sprintf("Org%d", o)
		ca, err := g.org(id)
		if err != nil {
			return nil, err
		}
		if err := g.admin(ca); err != nil {
			return nil, err
		}
		oc := node.OrgConfig{ID: id, CA: "crypto/" + id + "/ca.pem"}
		for i := range spec.PeersPerOrg {
			ep := node.EndpointConfig{Name: fmt.Sprintf("peer%d.%s", i, id)}
			ep.Address = next(ep.Name)
			var state *node.MemnodeClientConfig
			if spec.Memnodes {
				ports := mem[:2]
				mem = mem[2:]
				if state, err = g.memnode(ca, ep.Name, fmt.Sprintf("peer%d", i), ports); err != nil {
					return nil, err
				}
			}
			if err := g.node(ca, ep, fmt.Sprintf("peer%d", i), identity.RolePeer, state); err != nil {
				return nil, err
			}
			oc.Peers = append(oc.Peers, ep)
		}
		for c := range spec.ClientsPerOrg {
			if err := g.client(ca, fmt.Sprintf("client%d", c)); err != nil {
				return nil, err
			}
		}
		ch.Orgs = append(ch.Orgs, oc)
	}
	if err := g.computes(spec.Compute); err != nil {
		return nil, err
	}
	ch.Orgs = append(ch.Orgs, ordOrg)
	ch.EnsureDefaults()
	if err := ch.Validate(); err != nil {
		return nil, fmt.Errorf("localnet: the generated channel is invalid: %w", err)
	}
	if err := g.writeYAML(g.lay.Channel, "Channel of a local strand network, written by localnet.Generate.\n# Fields: docs/config.md.", ch); err != nil {
		return nil, err
	}
	if err := g.lay.Save(); err != nil {
		return nil, err
	}
	for i := 2; i <= spec.Channels; i++ {
		if _, err := AddChannel(g.lay, ch.Channel+strconv.Itoa(i)); err != nil {
			return nil, err
		}
	}
	return g.lay, nil
}

// allocPorts returns n ports: consecutive from base, or, when base is 0,
// free ones on 127.0.0.1 drawn at random below the kernel's ephemeral
// range (freePortRange), none of them in avoid. Below that range no
// outgoing connection is ever given the port, so a node that stops keeps
// its port until it starts again: a port the kernel lends (port 0) would
// go to any process's next connection while the node is down, and its
// restart would fail with "address already in use". The listeners stay
// open until all n are chosen, so the ports are distinct; avoid holds
// the ports of nodes already generated, whose listeners were closed long
// ago, so that a node added later never gets the port of a stopped one.
func allocPorts(base, n int, avoid ...map[int]bool) ([]int, error) {
	ports := make([]int, 0, n)
	if base > 0 {
		for i := range n {
			ports = append(ports, base+i)
		}
		return ports, nil
	}
	lo, hi := freePortRange()
	taken := map[int]bool{}
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("localnet: find %d free ports on 127.0.0.1 in %d-%d: too many are in use", n, lo, hi)
		}
		port := lo + rand.IntN(hi-lo+1)
		if taken[port] || len(avoid) > 0 && avoid[0][port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // in use
		}
		defer l.Close() // held until all are chosen
		taken[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}

// freePortRange is where allocPorts draws ports: the 12,000 ports below
// the start of the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range; Linux's default start 32768
// where it cannot be read), and never below 1024.
func freePortRange() (lo, hi int) {
	first := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 1024 {
				first = v
			}
		}
	}
	return max(1024, first-12000), first - 1
}

// usedPorts returns the ports of every node of the layout, on any host.
func (l *Layout) usedPorts() map[int]bool {
	used := map[int]bool{}
	for _, set := range [][]Node{l.Nodes, l.Memnodes, l.Computes} {
		for _, n := range set {
			for _, addr := range []string{n.Address, n.Metrics} {
				if _, p, err := net.SplitHostPort(addr); err == nil {
					if port, err := strconv.Atoi(p); err == nil {
						used[port] = true
					}
				}
			}
		}
	}
	return used
}
