package orderer

import (
	"crypto/tls"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/internal/grpctune"
	"github.com/strand-ledger/strand/mux"
)

// ClusterConns are the connections an orderer process keeps to the other
// orderers, shared by the Raft transports of all its channels: one
// connection per address, however many channels the two processes
// order together. Each channel's Raft messages travel on a Step stream of
// their own over that connection, tagged with the channel
// (ChannelHeader), and forwarded transactions name their channel in their
// own bytes; the receiving process routes both to that channel's
// transport, which authenticates the caller against its own channel's
// members (Channels).
//
// The connection's TLS config is the process's: it presents the
// orderer's certificate and trusts the CAs of every channel the process
// orders (as its listener does). Which member a channel's link reaches
// is then checked by the other side, which serves a channel's Raft
// messages only to that channel's orderers.
type ClusterConns struct {
	clientTLS *tls.Config

	mu struct {
		sync.Mutex
		closed bool
		byAddr map[string]*sharedConn
	}
}

type sharedConn struct {
	conn  *mux.Conn
	users int
}

// NewClusterConns returns an empty set of connections dialled with
// clientTLS.
func NewClusterConns(clientTLS *tls.Config) *ClusterConns {
	c := &ClusterConns{clientTLS: clientTLS}
	c.mu.byAddr = map[string]*sharedConn{}
	return c
}

// ErrConnsClosed: a connection was asked of closed ClusterConns.
var ErrConnsClosed = errors.New("orderer: cluster connections closed")

// get returns the connection to addr, dialling it if no channel uses one
// yet, and the function that hands it back (the last user's release
// closes it).
func (c *ClusterConns) get(addr string) (*mux.Conn, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, nil, fmt.Errorf("%w: dialling %s", ErrConnsClosed, addr)
	}
	sc, ok := c.mu.byAddr[addr]
	if !ok {
		cc, err := dialOrderer(addr, c.clientTLS)
		if err != nil {
			return nil, nil, err
		}
		sc = &sharedConn{conn: mux.NewConn(cc)}
		c.mu.byAddr[addr] = sc
	}
	sc.users++
	var once sync.Once
	return sc.conn, func() { once.Do(func() { c.release(addr, sc) }) }, nil
}

func (c *ClusterConns) release(addr string, sc *sharedConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sc.users--
	if sc.users == 0 && c.mu.byAddr[addr] == sc {
		delete(c.mu.byAddr, addr)
		sc.conn.Close()
	}
}

// Len is the number of open connections.
func (c *ClusterConns) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.byAddr)
}

// Close closes every connection; call it after the orderers that use
// them are closed.
func (c *ClusterConns) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.closed = true
	var errs []error
	for addr, sc := range c.mu.byAddr {
		errs = append(errs, sc.conn.Close())
		delete(c.mu.byAddr, addr)
	}
	return errors.Join(errs...)
}

// dialOrderer makes the client connection to another orderer.
func dialOrderer(addr string, clientTLS *tls.Config) (*grpc.ClientConn, error) {
	opts := append(grpctune.DialOptions(), grpc.WithTransportCredentials(credentials.NewTLS(clientTLS)), Redial,
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRaftMsg)))
	return grpc.NewClient(addr, opts...)
}
