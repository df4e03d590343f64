package localnet

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

// Conn is a client connection to one peer's gateway of the network.
type Conn struct {
	Gateway *client.Gateway
	Channel string
	Peer    Node
	Client  Client
	// TLS is the client's TLS configuration towards Peer (Probe).
	TLS *tls.Config

	owner *client.Gateway // set by OnChannel: the connection Close closes
}

// OnChannel returns c addressing channel instead of the network's
// channel, on a peer that serves several (docs/channels.md). Closing it
// closes c's connection.
func (c *Conn) OnChannel(channel string) *Conn {
	owner := c.owner
	if owner == nil {
		owner = c.Gateway
	}
	return &Conn{Gateway: c.Gateway.OnChannel(channel), Channel: channel, Peer: c.Peer, Client: c.Client, TLS: c.TLS, owner: owner}
}

// Probe says why Peer may not answer c (node.ProbeTLS): a node that
// runs but refuses c's TLS certificate is node.ErrTLSRefused.
func (c *Conn) Probe(ctx context.Context) error { return node.ProbeTLS(ctx, c.Peer.Address, c.TLS) }

// Connect connects as the client identity of org to peer (a peer's name;
// "" means org's first peer) over mutual TLS.
func (l *Layout) Connect(org, peer string) (*Conn, error) {
	c, err := l.Client(org)
	if err != nil {
		return nil, err
	}
	return l.ConnectAs(c, peer)
}

// ConnectReader connects to peer n as a client that may read the
// channel's blocks: its own org's client, or, for a peer of an org a
// membership update added (not in the channel file, so not named by the
// genesis readers policy, docs/membership.md), the client of the first
// genesis org that has one.
func (l *Layout) ConnectReader(n Node) (*Conn, error) {
	ch, err := node.LoadChannel(l.Channel)
	if err != nil {
		return nil, err
	}
	var first string
	for _, o := range ch.Orgs {
		if o.ID == n.Org {
			return l.Connect(n.Org, n.Name)
		}
		if _, err := l.Client(o.ID); err == nil && first == "" {
			first = o.ID
		}
	}
	if first == "" {
		return nil, fmt.Errorf("localnet: no client of a genesis org of channel %q in the network in %s to read %s's blocks as", ch.Channel, l.Dir, n.Name)
	}
	return l.Connect(first, n.Name)
}

// ConnectAs connects as client c (one of l.Clients) to peer ("" means the
// first peer of c's org) over mutual TLS.
func (l *Layout) ConnectAs(c Client, peer string) (*Conn, error) {
	var p Node
	if peer != "" { // any org's: an orderer org's client has no peer of its own
		var ok bool
		if p, ok = l.Node(peer); !ok || p.Role != identity.RolePeer {
			return nil, fmt.Errorf("localnet: %q is not a peer of the network in %s", peer, l.Dir)
		}
	} else {
		var err error
		if p, err = l.Peer(c.Org); err != nil {
			return nil, err
		}
	}
	ch, err := node.LoadChannel(l.Channel)
	if err != nil {
		return nil, err
	}
	signer, err := c.signer()
	if err != nil {
		return nil, err
	}
	added, err := l.addedOrgCAs(ch)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := node.ClientTLS(ch, c.TLSCert, c.TLSKey, added...)
	if err != nil {
		return nil, err
	}
	tlsCfg = node.ExpectServer(tlsCfg, identity.RolePeer)
	gw, err := client.Connect(p.Address, signer, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		return nil, err
	}
	// Every call names the network's channel: its peers may serve more
	// (AddChannel).
	return (&Conn{Gateway: gw, Peer: p, Client: c, TLS: tlsCfg}).OnChannel(ch.Channel), nil
}

// Signer loads the client's (or admin's) signing identity.
func (c Client) Signer() (*identity.Signer, error) { return c.signer() }

// signer loads the client's signing identity.
func (c Client) signer() (*identity.Signer, error) {
	certPEM, err := os.ReadFile(c.Cert)
	if err != nil {
		return nil, fmt.Errorf("localnet: client %s: %w", c.Name, err)
	}
	keyPEM, err := os.ReadFile(c.Key)
	if err != nil {
		return nil, fmt.Errorf("localnet: client %s: %w", c.Name, err)
	}
	signer, err := identity.LoadSigner(c.Org, certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("localnet: client %s: %w", c.Name, err)
	}
	return signer, nil
}

// As returns a Conn that acts as client cl over c's connection (see
// client.Gateway.As); its Close does nothing.
func (c *Conn) As(cl Client) (*Conn, error) {
	signer, err := cl.signer()
	if err != nil {
		return nil, err
	}
	return &Conn{Gateway: c.Gateway.As(signer), Channel: c.Channel, Peer: c.Peer, Client: cl, TLS: c.TLS}, nil
}

// Contract returns a handle on contract name of the network's channel.
func (c *Conn) Contract(name string) *client.Contract { return c.Gateway.Contract(c.Channel, name) }

// Close closes the connection.
func (c *Conn) Close() error {
	if c.owner != nil {
		return c.owner.Close()
	}
	return c.Gateway.Close()
}

// Height returns the height of the connected peer (its committed blocks):
// it streams block events from block 0 and stops once none has arrived
// for idle. The gateway sends the committed blocks at once, so idle only
// needs to cover a pause between two sends (100ms is ample locally). The
// cost grows with the chain: it is for local networks.
func (c *Conn) Height(ctx context.Context, idle time.Duration) (uint64, error) {
	return c.events(ctx, idle, func(*api.BlockEvent) {})
}

// events streams block events from block 0 to fn, in order, until none
// has arrived for idle, and returns the height they reached. A peer that
// joined from a snapshot has no blocks below the snapshot's height: its
// gateway refuses block 0 with where its ledger starts (a status detail
// that gateway.LedgerStart reads), and events start there.
func (c *Conn) events(ctx context.Context, idle time.Duration, fn func(*api.BlockEvent)) (uint64, error) {
	h, err := c.eventsFrom(ctx, 0, idle, fn)
	if base, ok := gateway.LedgerStart(err); ok && h == 0 && base > 0 {
		return c.eventsFrom(ctx, base, idle, fn)
	}
	return h, err
}

func (c *Conn) eventsFrom(ctx context.Context, start uint64, idle time.Duration, fn func(*api.BlockEvent)) (uint64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, errc := c.Gateway.BlockEvents(ctx, start)
	height := start
	// From block 0 a peer has something to send at once (block 0, the
	// genesis block) or refuses: until it does, idle does not run, so a
	// peer that has not answered yet (still connecting, or down and its
	// refusal not in) never reads as height 0. From a snapshot's height the
	// peer has answered already, and may have nothing to send.
	var idleC <-chan time.Time
	timer := time.NewTimer(idle)
	defer timer.Stop()
	if start > 0 {
		idleC = timer.C
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return 0, fmt.Errorf("localnet: height of %s: %w", c.Peer.Name, <-errc)
			}
			fn(ev)
			height = ev.Number + 1
			timer.Reset(idle)
			idleC = timer.C
		case <-idleC:
			return height, nil
		}
	}
}
