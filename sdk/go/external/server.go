package external

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
)

// Version is the protocol version this server speaks.
const Version = 1

// MaxMessageBytes bounds one protocol message (a peer's default limit).
const MaxMessageBytes = 16 << 20

// ErrCancelled is what a state read returns once the peer stopped
// waiting for the call.
var ErrCancelled = errors.New("external: the peer cancelled the call")

// Server is a contract server: register it on a grpc.Server
// (api.RegisterContractServer) or let Serve do it.
type Server struct {
	api.UnimplementedContractServer
	c contract.Contract
}

// NewServer returns a server of c.
func NewServer(c contract.Contract) *Server { return &Server{c: c} }

// Serve serves c on lis with tlsConfig (mutual TLS) until lis fails or
// is closed.
func Serve(lis net.Listener, c contract.Contract, tlsConfig *tls.Config) error {
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(tlsConfig)), grpc.MaxRecvMsgSize(MaxMessageBytes), grpc.MaxSendMsgSize(MaxMessageBytes))
	api.RegisterContractServer(s, NewServer(c))
	return s.Serve(lis)
}

// ServerTLS builds a server's mutual-TLS config from PEM files: its
// certificate and key, and the CAs whose clients (peers) it accepts.
func ServerTLS(certFile, keyFile string, clientCAFiles ...string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("external: server certificate: %w", err)
	}
	pool := x509.NewCertPool()
	for _, f := range clientCAFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("external: client CA: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("external: client CA %s holds no PEM certificate", f)
		}
	}
	if len(clientCAFiles) == 0 {
		return nil, fmt.Errorf("external: no client CA: a contract server accepts only peers whose certificates chain to their orgs' CAs")
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}, nil
}

// Connect serves one peer's stream.
func (s *Server) Connect(stream api.Contract_ConnectServer) error {
	c := &peerConn{s: s, stream: stream, calls: map[uint64]*call{}}
	defer c.cancelAll()
	for {
		msg, err := stream.Recv()
		if err != nil {
			return err
		}
		switch k := msg.Kind.(type) {
		case *api.ContractRequest_Hello:
			if err := c.send(&api.ContractReply{Kind: &api.ContractReply_Hello{Hello: &api.ContractHello{Version: Version}}}); err != nil {
				return err
			}
		case *api.ContractRequest_Invoke:
			cl := newCall(c, msg.Call, k.Invoke)
			if cl == nil {
				continue
			}
			go cl.run()
		case *api.ContractRequest_State:
			if cl := c.get(msg.Call); cl != nil {
				cl.answer(k.State)
			}
		case *api.ContractRequest_Cancel:
			if cl := c.get(msg.Call); cl != nil {
				cl.cancel()
			}
		}
	}
}

// peerConn is one peer's stream and its calls.
type peerConn struct {
	s      *Server
	stream api.Contract_ConnectServer
	sendMu sync.Mutex

	mu    sync.Mutex
	calls map[uint64]*call
}

func (c *peerConn) send(m *api.ContractReply) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.stream.Send(m)
}

func (c *peerConn) get(id uint64) *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[id]
}

func (c *peerConn) remove(id uint64) {
	c.mu.Lock()
	delete(c.calls, id)
	c.mu.Unlock()
}

func (c *peerConn) cancelAll() {
	c.mu.Lock()
	calls := c.calls
	c.calls = map[uint64]*call{}
	c.mu.Unlock()
	for _, cl := range calls {
		cl.cancel()
	}
}
