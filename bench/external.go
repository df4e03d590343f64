package bench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contract/external"
	"github.com/strand-ledger/strand/contracts/smallbank"
	sdk "github.com/strand-ledger/strand/sdk/go/external"
)

// RuntimeExternal runs the workload's contract on an external contract
// server (Round.ContractRuntime).
const RuntimeExternal = "external"

// externalContracts are the workloads whose contract the bench can serve
// externally: the contract's name and its code, served by the Go SDK.
var externalContracts = map[string]struct {
	name string
	new  func() contract.Contract
}{
	"smallbank": {"smallbank", smallbank.New},
}

// externalServer is a contract server in the bench's process (the Go
// SDK over gRPC with mutual TLS on 127.0.0.1) for an embedded network's
// peers. Its certificate is self-signed and pinned by the connection
// package; the peers' certificates are checked against the network's org
// CAs once the network exists (trust).
type externalServer struct {
	lis net.Listener
	srv *grpc.Server
	pkg []byte
	cas atomic.Pointer[x509.CertPool]
}

// startExternal serves the round's contract; its connection package is
// s.pkg.
func startExternal(workload string) (*externalServer, error) {
	ex, ok := externalContracts[workload]
	if !ok {
		return nil, fmt.Errorf("no external build of workload %s's contract", workload)
	}
	cert, certPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	s := &externalServer{}
	if s.lis, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	if s.pkg, err = (&external.Package{Address: s.lis.Addr().String(), RootCert: string(certPEM)}).Encode(); err != nil {
		s.lis.Close()
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAnyClientCert,
		VerifyPeerCertificate: s.verifyPeer}
	s.srv = grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)), grpc.MaxRecvMsgSize(sdk.MaxMessageBytes), grpc.MaxSendMsgSize(sdk.MaxMessageBytes))
	api.RegisterContractServer(s.srv, sdk.NewServer(ex.new()))
	go s.srv.Serve(s.lis)
	return s, nil
}

// trust accepts peers whose certificates chain to the org CAs of the
// network in dir (crypto/<org>/ca.pem).
func (s *externalServer) trust(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "crypto", "*", "ca.pem"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no org CA under %s/crypto (%v)", dir, err)
	}
	pool := x509.NewCertPool()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		pool.AppendCertsFromPEM(b)
	}
	s.cas.Store(pool)
	return nil
}

func (s *externalServer) verifyPeer(raw [][]byte, _ [][]*x509.Certificate) error {
	pool := s.cas.Load()
	if pool == nil || len(raw) == 0 {
		return errors.New("bench: the contract server trusts no peer yet")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return err
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err
}

func (s *externalServer) Close() {
	s.srv.Stop()
	s.lis.Close()
}

// selfSigned is a server certificate for 127.0.0.1 that is its own root.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "strand bench contract server"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))
	return cert, certPEM, err
}
