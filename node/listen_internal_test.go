package node

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strand-ledger/strand/identity"
)

// flakyListener fails its first Accept as a process out of file
// descriptors does, then accepts as lis.
type flakyListener struct {
	net.Listener
	failed atomic.Bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if !l.failed.Swap(true) {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestRoleListener: each connection reaches the child listener its client
// certificate's role picks, as a handshaken *tls.Conn whose state names
// that certificate, and an accept error other than a closed listener (out
// of file descriptors) does not stop the listener. Before, the first such
// error closed it for good. After Close, both children's Accept fail with
// net.ErrClosed.
func TestRoleListener(t *testing.T) {
	peer := newParty(t, "Org1", "peer0.Org1", identity.RolePeer)
	ord := newParty(t, "OrdererOrg", "orderer0", identity.RoleOrderer)
	cas := [][]byte{peer.caPEM, ord.caPEM}
	serverTLS, _, err := TLSConfigs(ord.cert, ord.key, cas)
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	byRole := func(leaf *x509.Certificate) int {
		if len(leaf.Subject.OrganizationalUnit) > 0 && leaf.Subject.OrganizationalUnit[0] == "orderer" {
			return 1
		}
		return 0
	}
	r := newRoleListener(&flakyListener{Listener: tcp}, serverTLS, 2, byRole, slog.New(slog.DiscardHandler))
	defer r.Close()

	for _, c := range []struct {
		name  string
		who   party
		child int
	}{{"peer0.Org1", peer, 0}, {"orderer0", ord, 1}, {"peer0.Org1 again", peer, 0}} {
		_, client, err := TLSConfigs(c.who.cert, c.who.key, cas)
		if err != nil {
			t.Fatal(err)
		}
		client.NextProtos = []string{"h2"}
		conn, err := tls.Dial("tcp", r.Addr().String(), client)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer conn.Close()
		got := make(chan net.Conn, 1)
		go func() {
			if sc, err := r.outs[c.child].Accept(); err == nil {
				got <- sc
			}
		}()
		select {
		case sc := <-got:
			state := sc.(*tls.Conn).ConnectionState()
			block, _ := pem.Decode(c.who.cert)
			if len(state.PeerCertificates) == 0 || !bytes.Equal(state.PeerCertificates[0].Raw, block.Bytes) || state.NegotiatedProtocol != "h2" {
				t.Errorf("child %d got a connection with %d certificates, protocol %q; want %s's certificate over h2",
					c.child, len(state.PeerCertificates), state.NegotiatedProtocol, c.name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the connection of %s did not reach child listener %d in 10 s", c.name, c.child)
		}
	}
	r.Close()
	for i, out := range r.outs {
		if _, err := out.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("child %d Accept after Close: %v, want net.ErrClosed", i, err)
		}
	}
}
