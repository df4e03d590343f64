package orderer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
	grpcpeer "google.golang.org/grpc/peer"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/orderer/cut"
)

// stream is a stream-mode config whose timeout would never cut a block
// within a test: every block below is cut by Free or by MaxTxs.
var stream = cut.Config{Mode: cut.ModeStream, MaxTxs: 100, Timeout: time.Hour}

// TestStreamLightLoad: one transaction at a time, each gets a block of its
// own at once (the hour-long timeout never fires).
func TestStreamLightLoad(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, stream)
	var prev []byte
	for i, k := range keys("s", 5) {
		ids := submitAll(t, n, o, k)
		b := blocks(t, o, uint64(i), 1)
		prev = checkChain(t, n.reg, prev, b)
		if got := txIDs(t, b); !slices.Equal(got, ids) {
			t.Fatalf("block %d holds txs %v, want just %v", i, got, ids)
		}
	}
}

// TestStreamBurstWhileSealBusy: while seal is held on the first block, a
// burst accumulates in the cutter; full batches (MaxTxs) go as they fill,
// and the rest goes as one block the moment seal is free again.
func TestStreamBurstWhileSealBusy(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	calls := 0
	n, o := startStream(t, func(o *Orderer) {
		o.sealHook = func() { // seal's goroutine only
			if calls++; calls == 1 {
				close(entered)
				<-release
			}
		}
	})

	ids := submitAll(t, n, o, "first")
	<-entered // seal holds block 0 and is busy
	ids = append(ids, submitAll(t, n, o, keys("burst", 250)...)...)
	// Once the queue is empty the loop has taken (and added) every burst
	// transaction, so none can reach the cutter after seal's wake-up.
	for deadline := time.Now().Add(10 * time.Second); len(o.in) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the loop left %d transactions in the queue", len(o.in))
		}
	}
	close(release)

	blks := blocks(t, o, 0, 4)
	checkChain(t, n.reg, nil, blks)
	var sizes []int
	for _, b := range blks {
		sizes = append(sizes, len(b.Transactions))
	}
	if want := []int{1, 100, 100, 50}; !slices.Equal(sizes, want) {
		t.Errorf("block sizes %v, want %v (one alone, two full while seal was busy, the rest when it was free)", sizes, want)
	}
	if got := txIDs(t, blks); !slices.Equal(got, ids) {
		t.Errorf("tx ids out of order: got %d ids, want %d in submission order", len(got), len(ids))
	}
	if h := o.Height(); h != 4 {
		t.Errorf("Height %d, want 4", h)
	}
}

// TestStreamPacing: while a peer reports that it is more than one block
// behind, the loop holds the next cut (counted in Metrics.Paced); a report
// that it caught up releases the block at once.
func TestStreamPacing(t *testing.T) {
	n, o := startStream(t, func(o *Orderer) {
		o.paceMaxHold = time.Hour // only a report can release the hold
	})
	for i, k := range keys("unpaced", 3) { // no reports yet: cut at once
		submitAll(t, n, o, k)
		blocks(t, o, uint64(i), 1)
	}
	o.Report(t.Context(), "peer0.Org1", 1) // blocks 1 and 2 not committed there
	o.Report(t.Context(), "peer0.Org2", 3) // up to date
	ids := submitAll(t, n, o, "held")
	for deadline := time.Now().Add(10 * time.Second); o.Metrics().Paced == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the loop never held a cut for the peer behind")
		}
	}
	if h := o.Height(); h != 3 {
		t.Fatalf("height %d while holding, want 3", h)
	}
	o.Report(t.Context(), "peer0.Org1", 2) // one block behind: close enough
	b := blocks(t, o, 3, 1)
	if got := txIDs(t, b); !slices.Equal(got, ids) {
		t.Fatalf("block 3 holds %v, want %v", got, ids)
	}
	if p := o.Metrics().Paced; p != 1 {
		t.Errorf("Paced = %d, want 1", p)
	}
}

// TestStreamPacingLimit: a hold that no report ends lasts paceMaxHold,
// and Metrics.PacedToLimit counts it.
func TestStreamPacingLimit(t *testing.T) {
	n, o := startStream(t, func(o *Orderer) { o.paceMaxHold = 20 * time.Millisecond })
	for i, k := range keys("unpaced", 3) {
		submitAll(t, n, o, k)
		blocks(t, o, uint64(i), 1)
	}
	o.Report(t.Context(), "peer0.Org1", 1) // two blocks behind, and it never reports again
	start := time.Now()
	ids := submitAll(t, n, o, "held")
	b := blocks(t, o, 3, 1)
	if got := txIDs(t, b); !slices.Equal(got, ids) {
		t.Fatalf("block 3 holds %v, want %v", got, ids)
	}
	if m := o.Metrics(); m.Paced != 1 || m.PacedToLimit != 1 {
		t.Errorf("Paced %d, PacedToLimit %d; want 1 and 1", m.Paced, m.PacedToLimit)
	}
	if d := time.Since(start); d < o.paceMaxHold {
		t.Errorf("block 3 came %v after its transaction, before the hold's limit %v", d, o.paceMaxHold)
	}
}

// startStream starts a single-node stream-mode orderer on a fresh store,
// after tune has set its test hooks, and closes both when the test ends.
func startStream(t *testing.T, tune func(*Orderer)) (*testNet, *Orderer) {
	t.Helper()
	n := newTestNet(t)
	store := openStore(t, t.TempDir())
	o, err := newOrderer(n.config(store, stream))
	if err != nil {
		t.Fatal(err)
	}
	tune(o)
	o.start()
	t.Cleanup(func() {
		if err := o.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		store.Close()
	})
	return n, o
}

// TestReportCaller: a height report counts under the caller's TLS
// certificate, which must be a peer of the channel; a client's report, or
// one on a TLS connection without a certificate, is dropped, whatever peer
// it names (one pacer serves every channel of the process, so a low height
// in a peer's name would hold back the channels that peer serves).
func TestReportCaller(t *testing.T) {
	n, o := startStream(t, func(*Orderer) {})
	onTLS := func(s *identity.Signer) context.Context {
		st := tls.ConnectionState{}
		if s != nil {
			c, err := x509.ParseCertificate(s.Identity().Cert)
			if err != nil {
				t.Fatal(err)
			}
			st.PeerCertificates = []*x509.Certificate{c}
		}
		return grpcpeer.NewContext(t.Context(), &grpcpeer.Peer{Addr: &net.TCPAddr{}, AuthInfo: credentials.TLSInfo{State: st}})
	}
	o.Report(onTLS(n.client1), "peer0.Org1", 3)
	o.Report(onTLS(nil), "peer0.Org1", 4)
	o.Report(onTLS(n.peer1), "peer0.Org2", 5) // counted as its certificate's
	if _, ok := o.pace.Reported("peer0.Org1", testChannel); ok {
		t.Error("a client's report, or one without a certificate, was recorded in the peer's name")
	}
	if _, ok := o.pace.Reported("peer0.Org2", testChannel); ok {
		t.Error("peer1's report was recorded under the name it claimed")
	}
	if h, ok := o.pace.Reported("Org1/peer1", testChannel); !ok || h != 5 {
		t.Errorf("peer1's report: %d, %v; want 5 under Org1/peer1", h, ok)
	}
	if m := o.Metrics(); m.ReportsRefused != 2 {
		t.Errorf("ReportsRefused %d, want 2", m.ReportsRefused)
	}
}
