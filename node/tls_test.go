package node

import (
	"crypto/tls"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/identity"
)

type party struct {
	ca        *identity.CA
	cert, key []byte
	caPEM     []byte
}

func newParty(t *testing.T, org, name string, role identity.Role) party {
	t.Helper()
	ca, err := identity.NewCA(org, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	return issue(t, ca, name, role)
}

func issue(t *testing.T, ca *identity.CA, name string, role identity.Role) party {
	t.Helper()
	cert, key, err := ca.IssueTLS(name, role, []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _, _ := ca.MarshalPEM()
	return party{ca: ca, cert: cert, key: key, caPEM: caPEM}
}

// handshake runs one TLS connection over 127.0.0.1 and returns the
// server's and the client's errors (the client's includes its first read).
func handshake(t *testing.T, server, client *tls.Config) (srvErr, cliErr error) {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		if err := c.(*tls.Conn).Handshake(); err != nil {
			done <- err
			return
		}
		_, err = c.Write([]byte("ok"))
		done <- err
	}()
	c, err := tls.Dial("tcp", l.Addr().String(), client)
	if err == nil {
		defer c.Close()
		buf := make([]byte, 2)
		_, err = io.ReadFull(c, buf)
	}
	return <-done, err
}

func TestMutualTLS(t *testing.T) {
	peer := newParty(t, "Org1", "peer0.Org1", identity.RolePeer)
	ord := newParty(t, "OrdererOrg", "orderer0", identity.RoleOrderer)
	evil := newParty(t, "Evil", "mallory", identity.RolePeer)
	cas := [][]byte{peer.caPEM, ord.caPEM}

	srv, _, err := TLSConfigs(ord.cert, ord.key, cas)
	if err != nil {
		t.Fatal(err)
	}
	_, cli, err := TLSConfigs(peer.cert, peer.key, cas)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("mutual", func(t *testing.T) {
		if s, c := handshake(t, srv, cli); s != nil || c != nil {
			t.Fatalf("server error %v, client error %v", s, c)
		}
	})
	t.Run("client from unknown CA", func(t *testing.T) {
		_, evilCli, err := TLSConfigs(evil.cert, evil.key, cas)
		if err != nil {
			t.Fatal(err)
		}
		s, c := handshake(t, srv, evilCli)
		if !errors.Is(s, ErrUntrustedPeer) || c == nil {
			t.Fatalf("server error %v, client error %v; want ErrUntrustedPeer and a client error", s, c)
		}
		t.Log(s)
		for _, w := range []string{`client certificate "CN=mallory,OU=peer,O=Evil"`, `issued by "CN=ca.Evil,O=Evil"`, "not signed by any CA of the channel (orgs OrdererOrg, Org1)"} {
			if !strings.Contains(s.Error(), w) {
				t.Errorf("server error %q lacks %q", s, w)
			}
		}
	})
	t.Run("server from unknown CA", func(t *testing.T) {
		evilSrv, _, err := TLSConfigs(evil.cert, evil.key, cas)
		if err != nil {
			t.Fatal(err)
		}
		_, c := handshake(t, evilSrv, cli)
		if !errors.Is(c, ErrUntrustedPeer) || !strings.Contains(c.Error(), `server certificate "CN=mallory,OU=peer,O=Evil" issued by "CN=ca.Evil,O=Evil" is not signed by any CA of the channel (orgs OrdererOrg, Org1)`) {
			t.Fatalf("client error %v", c)
		}
		t.Log(c)
	})
	t.Run("client without certificate", func(t *testing.T) {
		bare := cli.Clone()
		bare.Certificates = nil
		s, _ := handshake(t, srv, bare)
		if !errors.Is(s, ErrUntrustedPeer) || !strings.Contains(s.Error(), "presented no certificate") {
			t.Fatalf("server error %v", s)
		}
	})
	t.Run("wrong host name", func(t *testing.T) {
		other := cli.Clone()
		other.ServerName = "orderer.example.com"
		_, c := handshake(t, srv, other)
		if !errors.Is(c, ErrUntrustedPeer) || !strings.Contains(c.Error(), "orderer.example.com") {
			t.Fatalf("client error %v", c)
		}
	})
	t.Run("server of the expected role", func(t *testing.T) {
		if s, c := handshake(t, srv, ExpectServer(cli, identity.RoleOrderer)); s != nil || c != nil {
			t.Fatalf("server error %v, client error %v", s, c)
		}
	})
	t.Run("member of another role posing as an orderer", func(t *testing.T) {
		// A client's TLS key pair of a channel org: its chain checks out.
		cl := issue(t, peer.ca, "client0", identity.RoleClient)
		poser, _, err := TLSConfigs(cl.cert, cl.key, cas)
		if err != nil {
			t.Fatal(err)
		}
		if _, c := handshake(t, poser, cli); c != nil {
			t.Fatalf("without a role check the handshake fails: %v", c)
		}
		_, c := handshake(t, poser, ExpectServer(cli, identity.RoleOrderer))
		if !errors.Is(c, ErrUntrustedPeer) || !strings.Contains(c.Error(), `server certificate "CN=client0,OU=client,O=Org1" has role client, want orderer`) {
			t.Fatalf("client error %v", c)
		}
		t.Log(c)
	})
	t.Run("TLS 1.2 refused", func(t *testing.T) {
		old := cli.Clone()
		old.MinVersion, old.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
		if _, c := handshake(t, srv, old); c == nil {
			t.Fatal("TLS 1.2 client connected")
		}
	})
}

func TestTLSConfigsRefuses(t *testing.T) {
	p := newParty(t, "Org1", "peer0", identity.RolePeer)
	if _, _, err := TLSConfigs(p.cert, p.key, [][]byte{[]byte("junk")}); err == nil {
		t.Error("junk CA accepted")
	}
	if _, _, err := TLSConfigs(p.cert, p.key, [][]byte{p.cert}); err == nil {
		t.Error("leaf accepted as CA")
	}
	q := newParty(t, "Org1", "peer1", identity.RolePeer)
	if _, _, err := TLSConfigs(p.cert, q.key, [][]byte{p.caPEM}); err == nil {
		t.Error("mismatched key accepted")
	}
}
