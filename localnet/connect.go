package localnet

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

// Conn is a client connection to one peer's gateway of the network.
type Conn struct {
	Gateway *client.Gateway
	Channel string
	Peer    Node
	Client  Client
}

// Connect connects as the client identity of org to peer (a peer's name;
// "" means org's first peer) over mutual TLS.
func (l *Layout) Connect(org, peer string) (*Conn, error) {
	c, err := l.Client(org)
	if err != nil {
		return nil, err
	}
	p, err := l.Peer(org)
	if err != nil {
		return nil, err
	}
	if peer != "" {
		var ok bool
		if p, ok = l.Node(peer); !ok || p.Role != identity.RolePeer {
			return nil, fmt.Errorf("localnet: %q is not a peer of the network in %s", peer, l.Dir)
		}
	}
	ch, err := node.LoadChannel(l.Channel)
	if err != nil {
		return nil, err
	}
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
	tlsCfg, err := node.ClientTLS(ch, c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, err
	}
	gw, err := client.Connect(p.Address, signer, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		return nil, err
	}
	return &Conn{Gateway: gw, Channel: ch.Channel, Peer: p, Client: c}, nil
}

// Contract returns a handle on contract name of the network's channel.
func (c *Conn) Contract(name string) *client.Contract { return c.Gateway.Contract(c.Channel, name) }

// Close closes the connection.
func (c *Conn) Close() error { return c.Gateway.Close() }

// Height returns the height of the connected peer (its committed blocks):
// it streams block events from block 0 and stops once none has arrived
// for idle. The gateway sends the committed blocks at once, so idle only
// needs to cover a pause between two sends (100ms is ample locally). The
// cost grows with the chain: it is for local networks.
func (c *Conn) Height(ctx context.Context, idle time.Duration) (uint64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, errc := c.Gateway.BlockEvents(ctx, 0)
	var height uint64
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return 0, fmt.Errorf("localnet: height of %s: %w", c.Peer.Name, <-errc)
			}
			height = ev.Number + 1
			timer.Reset(idle)
		case <-timer.C:
			return height, nil
		}
	}
}
