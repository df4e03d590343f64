package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/strand-ledger/strand/api"
)

// reportSink is an orderer that records the height reports it gets; while
// hold is open, each report waits for a value on it.
type reportSink struct {
	api.OrdererClient
	hold chan struct{}
	mu   sync.Mutex
	got  []*api.SubmitBatchRequest
}

func (s *reportSink) SubmitBatch(_ context.Context, req *api.SubmitBatchRequest, _ ...grpc.CallOption) (*api.SubmitBatchResponse, error) {
	if s.hold != nil {
		<-s.hold
	}
	s.mu.Lock()
	s.got = append(s.got, req)
	s.mu.Unlock()
	return &api.SubmitBatchResponse{}, nil
}

func (s *reportSink) heights() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hs []uint64
	for _, r := range s.got {
		hs = append(hs, r.GetPeerHeight())
	}
	return hs
}

// waitReports waits until sink has n reports and no send loop runs.
func waitReports(t *testing.T, g *Gateway, sink *reportSink, n int) []uint64 {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		g.heights.mu.Lock()
		sending := g.heights.mu.sending
		g.heights.mu.Unlock()
		if hs := sink.heights(); len(hs) >= n && !sending {
			return hs
		}
		if time.Now().After(deadline) {
			t.Fatalf("reports %v, want %d", sink.heights(), n)
		}
	}
}

// TestHeightReports: after a commit, a gateway that submitted within
// reportFresh tells its preferred orderer the peer's height in an empty
// SubmitBatch naming the peer; reports coalesce to the latest height while
// one is in flight; none go after the gateway stopped submitting, nor
// without Config.ReportHeights.
func TestHeightReports(t *testing.T) {
	sink := &reportSink{hold: make(chan struct{})}
	g := &Gateway{cfg: Config{Peer: "peer0.Org1", ReportHeights: true, Orderers: []api.OrdererClient{sink, &reportSink{}}}}
	g.heights.g = g
	t0 := time.Now()
	g.heights.committed(3, t0) // nothing submitted yet
	g.heights.submitted(t0)
	g.heights.committed(4, t0.Add(time.Millisecond))
	for taken := false; !taken; time.Sleep(time.Millisecond) { // the send loop took 4
		g.heights.mu.Lock()
		taken = g.heights.mu.pending == 0
		g.heights.mu.Unlock()
	}
	g.heights.committed(5, t0.Add(2*time.Millisecond)) // while 4 is in flight
	g.heights.committed(6, t0.Add(3*time.Millisecond))
	sink.hold <- struct{}{} // 4
	sink.hold <- struct{}{} // 6: 5 was replaced before it went
	if hs := waitReports(t, g, sink, 2); len(hs) != 2 || hs[0] != 4 || hs[1] != 6 {
		t.Fatalf("reported heights %v, want [4 6]", hs)
	}
	if r := sink.got[0]; r.GetPeer() != "peer0.Org1" || len(r.GetTransactions()) != 0 {
		t.Errorf("report %v: want peer0.Org1 and no transactions", r)
	}
	close(sink.hold)
	g.heights.committed(7, t0.Add(reportFresh+time.Millisecond)) // last submit too long ago
	g.heights.submitted(t0.Add(time.Second))
	g.heights.committed(6, t0.Add(time.Second)) // not above the last one reported
	g.heights.committed(8, t0.Add(time.Second))
	if hs := waitReports(t, g, sink, 3); len(hs) != 3 || hs[2] != 8 {
		t.Fatalf("reported heights %v, want [4 6 8]", hs)
	}
	if m := g.metrics.snapshot(); m.HeightReports != 3 {
		t.Errorf("HeightReports = %d, want 3", m.HeightReports)
	}

	off := &reportSink{}
	g2 := &Gateway{cfg: Config{Peer: "p", Orderers: []api.OrdererClient{off}}}
	g2.heights.g = g2
	g2.heights.submitted(t0)
	g2.heights.committed(9, t0)
	time.Sleep(20 * time.Millisecond)
	if hs := off.heights(); len(hs) != 0 {
		t.Errorf("reports %v without Config.ReportHeights", hs)
	}
}
