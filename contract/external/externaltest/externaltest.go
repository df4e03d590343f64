// Package externaltest runs contract servers for tests: a Go contract
// in-process (the Go SDK, sdk/go/external) or a Python one as a real
// process (Debian's /usr/bin/python3 with python3-grpcio and
// python3-grpc-tools; its stubs generated from api/contract.proto into a
// temporary directory), each on 127.0.0.1 with mutual TLS from a fresh CA.
//
// A missing Python module skips the test on a developer's machine and
// fails it in CI (CI set), where .ci/run installs them.
package externaltest

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contract/external"
	"github.com/strand-ledger/strand/contract/wasm/wasmtest"
	sdk "github.com/strand-ledger/strand/sdk/go/external"
)

// PKI is a test CA and what it issued: a server certificate for
// 127.0.0.1 and a client (peer) certificate, as PEM files in Dir.
type PKI struct {
	Dir                           string
	CAPEM                         []byte
	CACert, ServerCert, ServerKey string // files
	ClientCert, ClientKey         string // files
	ca                            *x509.Certificate
	caKey                         *ecdsa.PrivateKey
	clientTLS                     tls.Certificate
}

// NewPKI makes a CA and its certificates under t.TempDir().
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	p := &PKI{Dir: t.TempDir()}
	var err error
	if p.caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "contract test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	p.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	p.CACert = p.write(t, "ca.pem", p.CAPEM)
	p.ServerCert, p.ServerKey, _ = p.Issue(t, "server", x509.ExtKeyUsageServerAuth)
	p.ClientCert, p.ClientKey, p.clientTLS = p.Issue(t, "peer", x509.ExtKeyUsageClientAuth)
	return p
}

func (p *PKI) write(t testing.TB, name string, b []byte) string {
	t.Helper()
	f := filepath.Join(p.Dir, name)
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// Issue issues a certificate for 127.0.0.1 named name and writes it and
// its key as name.pem and name.key.
func (p *PKI) Issue(t testing.TB, name string, usage x509.ExtKeyUsage) (certFile, keyFile string, cert tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
	if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	return p.write(t, name+".pem", certPEM), p.write(t, name+".key", keyPEM), cert
}

// ClientTLS is the peer's side: its client certificate.
func (p *PKI) ClientTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.clientTLS}}
}

// ServerTLS is the server's side: its certificate, and peers' client
// certificates required and verified against the CA.
func (p *PKI) ServerTLS(t testing.TB) *tls.Config {
	t.Helper()
	cfg, err := sdk.ServerTLS(p.ServerCert, p.ServerKey, p.CACert)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Package is the connection package of a server at addr with this CA.
func (p *PKI) Package(t testing.TB, addr string) []byte {
	t.Helper()
	raw, err := (&external.Package{Address: addr, RootCert: string(p.CAPEM)}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// ServeGo serves c in-process on 127.0.0.1 until the test ends; it
// returns the address.
func ServeGo(t testing.TB, p *PKI, c contract.Contract) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); sdk.Serve(lis, c, p.ServerTLS(t)) }()
	t.Cleanup(func() { lis.Close(); <-done })
	return lis.Addr().String()
}

// Python is a Python contract server process.
type Python struct {
	Addr string
	Cmd  *exec.Cmd
}

// PythonExe is Debian's interpreter, which has python3-grpcio (a python3
// earlier on PATH may be another without it).
const PythonExe = "/usr/bin/python3"

// NeedPython skips (or, in CI, fails) the test unless PythonExe has grpc
// and grpc_tools.
func NeedPython(t testing.TB) {
	t.Helper()
	if err := exec.Command(PythonExe, "-c", "import grpc, grpc_tools.protoc").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s cannot import grpc and grpc_tools (%v): .ci/run installs python3-grpcio and python3-grpc-tools", PythonExe, err)
		}
		t.Skipf("%s cannot import grpc and grpc_tools (%v): apt-get install python3-grpcio python3-grpc-tools", PythonExe, err)
	}
}

var stubs struct {
	sync.Mutex
	dir string
}

// PythonStubs generates the Python protocol stubs (contract_pb2.py,
// contract_pb2_grpc.py) from api/contract.proto, once per test binary, and
// returns their directory.
func PythonStubs(t testing.TB) string {
	t.Helper()
	NeedPython(t)
	stubs.Lock()
	defer stubs.Unlock()
	if stubs.dir != "" {
		return stubs.dir
	}
	root, err := wasmtest.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "externaltest")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(PythonExe, "-m", "grpc_tools.protoc", "-I"+filepath.Join(root, "api"),
		"--python_out="+dir, "--grpc_python_out="+dir, filepath.Join(root, "api", "contract.proto"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generating the Python stubs: %v\n%s", err, out)
	}
	stubs.dir = dir
	return dir
}

// StartPython runs the Python contract server script (relative to the
// module root, such as "examples/kv-py/kv_server.py") on 127.0.0.1 with
// p's certificates, waits until it listens, and stops it when the test
// ends. The script takes --listen, --cert, --key and --client-ca (given
// twice: p's CA and another's) and prints "listening on ADDR" once it
// serves.
func StartPython(t testing.TB, p *PKI, script string) *Python {
	t.Helper()
	dir := PythonStubs(t)
	root, err := wasmtest.Root()
	if err != nil {
		t.Fatal(err)
	}
	// A second org's CA after p's, as a server for a channel of two orgs
	// takes them: the server must trust every --client-ca, not the last.
	other := NewPKI(t)
	cmd := exec.Command(PythonExe, filepath.Join(root, script), "--listen", "127.0.0.1:0",
		"--cert", p.ServerCert, "--key", p.ServerKey, "--client-ca", p.CACert, "--client-ca", other.CACert)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir, "PYTHONUNBUFFERED=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("%s: want a first line \"listening on ADDR\", got %q (%v)", script, line, err)
	}
	return &Python{Addr: addr, Cmd: cmd}
}

// Unused returns an address on 127.0.0.1 where nothing listens (a port
// that was just free).
func Unused(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}
