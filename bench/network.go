package bench

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// NetOptions describe an embedded network.
type NetOptions struct {
	Orgs          int                // peer orgs, one peer each; default 2
	ClientsPerOrg int                // client identities per org; default 1
	Channels      int                // channels every peer serves (localnet.Spec.Channels); default 1
	Batch         node.BatchConfig   // the ordering service's batch limits
	StateDB       string             // peers' state database backend; "" = the default (pebble)
	Validation    string             // peers' pipeline.mode; "" = the default (sequential)
	Alg           identity.Algorithm // the identities' signature algorithm (localnet.Spec.Alg); default ECDSA P-256
	Keep          bool               // keep the directory at Close
	Disagg        Disagg             // memory nodes, caches and memtables (disagg.go)
	Wasm          map[string][]byte  // contracts run as WebAssembly modules (localnet.Spec.Wasm)
	External      map[string][]byte  // contracts run on external servers: connection packages (localnet.Spec.External)
	// Logf, if set, receives notes (the cgroups of dead runs removed).
	Logf func(string, ...any)
}

// Network is the network under load: embedded in this process (Orderer
// and Peers set), or one that `strand net up` runs in its own processes
// (Orderer nil, Peers empty).
type Network struct {
	Dir     string
	Layout  *localnet.Layout
	Orderer *node.Orderer
	Peers   []*node.Peer
	// others are an embedded network's further orderers (of its further
	// channels, each ordered by an orderer of its own).
	others  []*node.Orderer
	keep    bool
	owned   bool       // Dir was made here
	procs   bool       // StartProcesses started its nodes: Close stops them
	mem     *memLimits // the memory nodes' memory cgroups (memlimit.go); nil: none
	stopped sync.Once
}

// Embedded reports whether the network runs in this process.
func (n *Network) Embedded() bool { return n.Orderer != nil }

// StartEmbedded generates a network in a temporary directory and starts
// an orderer and every peer in this process: real gRPC over mutual TLS on
// 127.0.0.1, each node with its own ledger.
func StartEmbedded(o NetOptions) (_ *Network, err error) {
	dir, err := os.MkdirTemp("", "strand-bench-")
	if err != nil {
		return nil, err
	}
	n := &Network{Dir: dir, keep: o.Keep, owned: true}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	n.Layout, err = localnet.Generate(dir, o.spec())
	if err != nil {
		return nil, err
	}
	// The orderers first: a peer of several channels follows each
	// channel's orderers from its start.
	nodes := slices.Clone(n.Layout.Nodes)
	orderersFirst := func(n localnet.Node) int {
		if n.Role == identity.RoleOrderer {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(nodes, func(a, b localnet.Node) int { return cmp.Compare(orderersFirst(a), orderersFirst(b)) })
	for _, nd := range nodes {
		cfg, err := node.LoadNode(nd.Config)
		if err != nil {
			return nil, err
		}
		cfg.Log.Level = "error" // the benchmark prints its own progress
		if nd.Role == identity.RoleOrderer {
			o, err := node.StartOrderer(cfg)
			if err != nil {
				return nil, err
			}
			if n.Orderer == nil {
				n.Orderer = o
			} else {
				n.others = append(n.others, o)
			}
			continue
		}
		if o.StateDB != "" {
			cfg.StateDB.Backend = o.StateDB
			if err := cfg.Validate(); err != nil {
				return nil, fmt.Errorf("bench: state database %q: %w", o.StateDB, err)
			}
		}
		p, err := node.StartPeer(cfg)
		if err != nil {
			return nil, err
		}
		n.Peers = append(n.Peers, p)
	}
	return n, nil
}

// spec is the network's localnet.Spec.
func (o NetOptions) spec() localnet.Spec {
	s := o.Disagg.spec(localnet.Spec{Orgs: o.Orgs, ClientsPerOrg: o.ClientsPerOrg, Channels: o.Channels, Batch: o.Batch, Wasm: o.Wasm, External: o.External, Alg: o.Alg})
	if o.Validation != "" {
		tune := s.TuneNode
		s.TuneNode = func(n *node.NodeConfig) {
			if tune != nil {
				tune(n)
			}
			if n.Role == "peer" {
				n.Pipeline.Mode = o.Validation
			}
		}
	}
	return s
}

// OpenNet attaches to the network `strand net up` started in dir.
func OpenNet(dir string) (*Network, error) {
	l, err := localnet.Load(dir)
	if err != nil {
		return nil, err
	}
	return &Network{Dir: dir, Layout: l}, nil
}

// Close stops an embedded network and removes its directory unless kept.
func (n *Network) Close() {
	n.stop()
	if err := n.mem.close(); err != nil {
		n.mem.log("%v", err)
	}
	if n.owned && !n.keep && n.Dir != "" {
		os.RemoveAll(n.Dir)
	}
}

// stop stops the nodes the round started (embedded or processes), once,
// and keeps their directories: checks may read their ledgers after it.
// Embedded() stays true.
func (n *Network) stop() {
	n.stopped.Do(func() {
		for _, p := range n.Peers {
			p.Close()
		}
		if n.Orderer != nil {
			n.Orderer.Close()
		}
		for _, o := range n.others {
			o.Close()
		}
		if n.procs && n.Layout != nil {
			localnet.Down(n.Layout, localnet.DownOptions{})
		}
	})
}

// clientsPerConn is how many clients share one gRPC connection: their
// calls then share one stream and its writes (package mux), which halved
// the load generator's CPU per transaction against a connection each.
const clientsPerConn = 64

// Connect returns count clients, spread over the orgs (client i of org i
// mod orgs, through that org's first peer), each with its own identity
// while the layout has enough (beyond that identities are reused in turn),
// up to clientsPerConn of an org to a connection.
func (n *Network) Connect(count int) ([]*localnet.Conn, error) {
	orgs := n.Layout.Orgs()
	byOrg := map[string][]localnet.Client{}
	for _, c := range n.Layout.Clients {
		byOrg[c.Org] = append(byOrg[c.Org], c)
	}
	conns := make([]*localnet.Conn, 0, count)
	var shared []*localnet.Conn // the real connections, closed on failure
	fail := func(err error) ([]*localnet.Conn, error) {
		CloseAll(shared)
		return nil, err
	}
	open := map[string]*localnet.Conn{} // org's connection being filled
	for i := range count {
		org := orgs[i%len(orgs)]
		ids := byOrg[org]
		if len(ids) == 0 {
			return fail(fmt.Errorf("bench: org %s of the network in %s has no client identity", org, n.Layout.Dir))
		}
		k := i / len(orgs) // the org's k-th client
		id := ids[k%len(ids)]
		if k%clientsPerConn == 0 {
			c, err := n.Layout.ConnectAs(id, "")
			if err != nil {
				return fail(err)
			}
			open[org] = c
			shared = append(shared, c)
			conns = append(conns, c)
			continue
		}
		c, err := open[org].As(id)
		if err != nil {
			return fail(err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// CloseAll closes connections.
func CloseAll(conns []*localnet.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

// AwaitPeers waits until every embedded peer has the orderer's height.
func (n *Network) AwaitPeers(ctx context.Context, wait time.Duration) error {
	if !n.Embedded() {
		return nil
	}
	deadline := time.Now().Add(wait)
	for !n.sameHeight() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("bench: peers did not reach the orderer's height %d within %v", n.Orderer.Orderer.Height(), wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

func (n *Network) sameHeight() bool {
	h := n.Orderer.Orderer.Height()
	for _, p := range n.Peers {
		if p.Committer.Height() != h {
			return false
		}
	}
	return true
}

// CheckStateAgreement hashes namespace ns on every embedded peer (after
// AwaitPeers) and fails if two differ. It returns the common height.
func (n *Network) CheckStateAgreement(ns string) (uint64, error) {
	hashes := map[string]bool{}
	for _, p := range n.Peers {
		h, err := StateHash(p.State, ns)
		if err != nil {
			return 0, err
		}
		hashes[h] = true
	}
	if len(hashes) != 1 {
		return 0, fmt.Errorf("bench: the %d peers hold different states of %s", len(n.Peers), ns)
	}
	return n.Peers[0].Committer.Height(), nil
}

// StateHash hashes every key, value and version of namespace ns.
func StateHash(db statedb.DB, ns string) (string, error) {
	h := sha256.New()
	err := db.Scan(ns, "", "", func(k string, v statedb.Value) bool {
		fmt.Fprintf(h, "%d:%s=%d:%s@%s;", len(k), k, len(v.Data), v.Data, v.Version)
		return true
	})
	return hex.EncodeToString(h.Sum(nil)), err
}
