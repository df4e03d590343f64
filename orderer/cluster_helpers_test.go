package orderer

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/orderer/cut"
)

// cluster is a Raft cluster of real orderers in one process: real block
// stores and Raft logs in temp dirs, real gRPC with mutual TLS on
// 127.0.0.1. Nothing is mocked.
type cluster struct {
	t       testing.TB
	n       *testNet
	batch   cut.Config
	peers   []RaftPeer
	members []*member
	tune    func(*RaftConfig)
	pool    *x509.CertPool
}

type member struct {
	id        uint64
	name      string
	signer    *identity.Signer
	dir       string
	addr      string
	serverTLS *tls.Config
	clientTLS *tls.Config
	logs      *syncBuffer
	join      []RaftPeer // RaftConfig.Join: set for a member added by a config update
	// lis holds addr's port from newMember to the first start: closing
	// it in between would let the kernel give the port to any process's
	// outgoing connection meanwhile (seen in CI: bind: address in use).
	lis net.Listener

	// while running
	store *ledger.BlockStore
	o     *Orderer
	srv   *grpc.Server
}

// syncBuffer is a log sink that tests can read while the orderer writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tlsPair issues a TLS certificate from ca and returns the server and
// client configurations trusting every CA of the test net (the role of
// node.TLSConfigs in production).
func (c *cluster) tlsPair(ca *identity.CA, name string, role identity.Role) (server, client *tls.Config) {
	c.t.Helper()
	certPEM, keyPEM, err := ca.IssueTLS(name, role, []string{"127.0.0.1"})
	if err != nil {
		c.t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		c.t.Fatal(err)
	}
	server = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, ClientCAs: c.pool, ClientAuth: tls.RequireAndVerifyClientCert}
	client = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, RootCAs: c.pool}
	return server, client
}

// newCluster starts size orderers.
func newCluster(t testing.TB, size int, batch cut.Config, tune func(*RaftConfig)) *cluster {
	t.Helper()
	n := newTestNet(t)
	c := &cluster{t: t, n: n, batch: batch, tune: tune, pool: x509.NewCertPool()}
	for _, ca := range []*identity.CA{n.org1CA, n.ordererCA} {
		cert, err := x509.ParseCertificate(ca.CertDER())
		if err != nil {
			t.Fatal(err)
		}
		c.pool.AddCert(cert)
	}
	for range size {
		m := c.newMember()
		c.peers = append(c.peers, RaftPeer{ID: m.id, Org: "OrdererOrg", Name: m.name, Address: m.addr})
	}
	for i := range c.members {
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range c.members {
			c.stop(i, false)
		}
	})
	return c
}

// newMember creates orderer<n> (n its Raft id, the next) with its
// identities, directory and a free port, and appends it to c.members; it
// does not start it.
func (c *cluster) newMember() *member {
	c.t.Helper()
	id := uint64(len(c.members) + 1)
	name := fmt.Sprintf("orderer%d", id)
	s, err := c.n.ordererCA.Issue(name, identity.RoleOrderer, identity.ECDSAP256)
	if err != nil {
		c.t.Fatal(err)
	}
	m := &member{id: id, name: name, signer: s, dir: c.t.TempDir(), logs: &syncBuffer{}}
	m.serverTLS, m.clientTLS = c.tlsPair(c.n.ordererCA, name, identity.RoleOrderer)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	m.addr, m.lis = lis.Addr().String(), lis
	c.t.Cleanup(func() {
		if m.lis != nil { // never started
			m.lis.Close()
		}
	})
	c.members = append(c.members, m)
	return m
}

// start starts member i from its directories.
func (c *cluster) start(i int) {
	c.t.Helper()
	m := c.members[i]
	store, err := ledger.OpenBlockStore(filepath.Join(m.dir, "blocks"), ledger.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	rc := &RaftConfig{ID: m.id, Peers: c.peers, Join: m.join, Dir: filepath.Join(m.dir, "raft"), ClientTLS: m.clientTLS,
		TickInterval: 25 * time.Millisecond, ElectionTicks: 10, HeartbeatTicks: 1}
	if c.tune != nil {
		c.tune(rc)
	}
	cfg := c.n.config(store, c.batch)
	cfg.Signer, cfg.Raft = m.signer, rc
	cfg.Log = slog.New(slog.NewTextHandler(m.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	o, err := New(cfg)
	if err != nil {
		store.Close()
		c.t.Fatal(err)
	}
	lis := m.lis
	m.lis = nil
	for try := 0; lis == nil; try++ { // a restart: the port was ours a moment ago; retry briefly
		if lis, err = net.Listen("tcp", m.addr); err == nil || try == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		o.Close()
		store.Close()
		c.t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(m.serverTLS)))
	api.RegisterOrdererServer(srv, NewServer(o))
	RegisterCluster(srv, o)
	RegisterAdmin(srv, o)
	go srv.Serve(lis)
	m.store, m.o, m.srv = store, o, srv
}

// stop stops member i; crash stops its Raft loop at once first, as a
// SIGKILL would (nothing pending is flushed or proposed).
func (c *cluster) stop(i int, crash bool) {
	m := c.members[i]
	if m.o == nil {
		return
	}
	if crash {
		close(m.o.raft.kill)
	}
	m.srv.Stop()
	if err := m.o.Close(); err != nil && !crash {
		c.t.Errorf("orderer %d: Close: %v", m.id, err)
	}
	m.store.Close()
	m.o, m.store, m.srv = nil, nil, nil
}

// except returns the indexes of every member but i.
func (c *cluster) except(i int) []int {
	var idx []int
	for k := range c.members {
		if k != i {
			idx = append(idx, k)
		}
	}
	return idx
}

// leader waits until every running member agrees on one leader and
// returns its index.
func (c *cluster) leader() int {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		lead, agree := uint64(0), true
		for _, m := range c.members {
			if m.o == nil {
				continue
			}
			l := m.o.raft.leader.Load()
			if l == 0 || lead != 0 && l != lead {
				agree = false
				break
			}
			lead = l
		}
		if agree && lead != 0 && c.members[lead-1].o != nil {
			return int(lead - 1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no leader agreed within 10 s")
	return -1
}

// submit submits raw at member i, retrying while there is no leader (as
// a client would on 503).
func (c *cluster) submit(i int, raw []byte) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.members[i].o.Submit(context.Background(), raw)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrUnavailable) || time.Now().After(deadline) {
			c.t.Fatalf("submit at orderer %d: %v", c.members[i].id, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitTxs waits until member i has stored blocks holding want
// transactions in all (genesis-free chain), and returns its blocks.
func (c *cluster) waitTxs(i, want int) []*api.Block {
	c.t.Helper()
	m := c.members[i]
	deadline := time.Now().Add(10 * time.Second)
	for {
		blks := stored(c.t, m.store)
		got := 0
		for _, b := range blks {
			got += len(b.Transactions)
		}
		if got == want {
			return blks
		}
		if got > want || time.Now().After(deadline) {
			c.t.Fatalf("orderer %d holds %d txs in %d blocks, want %d\nmetrics: %v\nlog:\n%s", m.id, got, len(blks), want, m.o.Metrics(), m.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stored reads every block of a store.
func stored(t testing.TB, s *ledger.BlockStore) []*api.Block {
	t.Helper()
	var out []*api.Block
	for n := range s.Height() {
		b, err := s.Block(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// sameChain checks that the blocks are a valid chain (each signed by an
// orderer of the channel) with header hashes equal to ref's.
func sameChain(t testing.TB, reg *identity.Registry, ref, blks []*api.Block, who string) {
	t.Helper()
	checkChain(t, reg, nil, blks)
	if len(blks) != len(ref) {
		t.Fatalf("%s holds %d blocks, the reference %d", who, len(blks), len(ref))
	}
	for i := range blks {
		if !bytes.Equal(api.HeaderHash(blks[i].Header), api.HeaderHash(ref[i].Header)) {
			t.Fatalf("%s: block %d header hash differs from the reference", who, i)
		}
	}
}

// once checks that ids holds each of want exactly once and nothing else.
func once(t testing.TB, ids []string, want map[string]bool) {
	t.Helper()
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
		if seen[id] > 1 {
			t.Fatalf("tx %s ordered twice", id)
		}
		if !want[id] {
			t.Fatalf("tx %s ordered but never submitted", id)
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("%d distinct txs ordered, want %d", len(seen), len(want))
	}
}
