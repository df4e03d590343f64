package orderer

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/orderer/cut"
)

// TestChannelsRouting: one process, two channels, each its own orderer
// and block store. A transaction goes to the orderer of the channel it
// names and to no other; a submission or Deliver for a channel the
// process does not order is refused by name (404), one that names none
// with several channels too (400); with one channel, routing is as
// before Channels (its orderer refuses another channel's transaction).
func TestChannelsRouting(t *testing.T) {
	n := newTestNet(t)
	batch := cut.Config{MaxTxs: 1, Timeout: time.Millisecond}
	a, b := startOn(t, n, "ch1", batch), startOn(t, n, "ch2", batch)
	chs, err := NewChannels(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewChannels(a, a); !errors.Is(err, ErrBadConfig) {
		t.Errorf("NewChannels with ch1 twice: %v, want ErrBadConfig", err)
	}
	srv := chs.Server()
	ctx := context.Background()
	raw, id := n.txFor(t, "ch2", n.client1, "k")
	resp, err := srv.Submit(ctx, &api.SubmitRequest{Transaction: raw})
	if err != nil || resp.GetStatus() != StatusOK {
		t.Fatalf("Submit of a ch2 tx: %v, %v", resp, err)
	}
	got := txIDs(t, blocks(t, b, 0, 1))
	if len(got) != 1 || got[0] != id || a.Height() != 0 {
		t.Errorf("ch2 holds %v (want [%s]); ch1 is at height %d, want 0", got, id, a.Height())
	}
	batchResp, err := srv.SubmitBatch(ctx, &api.SubmitBatchRequest{Transactions: [][]byte{
		func() []byte { r, _ := n.txFor(t, "ch1", n.client1, "x"); return r }(),
		func() []byte { r, _ := n.txFor(t, "nope", n.client1, "y"); return r }(),
		[]byte("not a transaction"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r := batchResp.GetResponses(); len(r) != 3 || r[0].GetStatus() != StatusOK || r[1].GetStatus() != StatusNotFound || r[2].GetStatus() != StatusBadRequest {
		t.Errorf("SubmitBatch of a ch1, an unknown-channel and a malformed tx: %v", r)
	}
	blocks(t, a, 0, 1)

	nope, _ := n.txFor(t, "nope", n.client1, "k")
	resp, err = srv.Submit(ctx, &api.SubmitRequest{Transaction: nope})
	if want := `orderer: unknown channel "nope": this orderer orders channel(s) ch1, ch2`; err != nil || resp.GetStatus() != StatusNotFound || resp.GetMessage() != want {
		t.Errorf("Submit for channel nope: %v, %v; want 404 %q", resp, err, want)
	}
	resp, err = srv.Submit(ctx, &api.SubmitRequest{Transaction: raw, Channel: "ch1"})
	if err != nil || resp.GetStatus() != StatusNotFound || !strings.Contains(resp.GetMessage(), "orderer: wrong channel") {
		t.Errorf("Submit of a ch2 tx routed to ch1: %v, %v; want ch1's 404 wrong channel", resp, err)
	}
	for _, tc := range []struct {
		channel string
		code    codes.Code
		want    string
	}{
		{"nope", codes.NotFound, `orderer: unknown channel "nope": this orderer orders channel(s) ch1, ch2`},
		{"", codes.InvalidArgument, "orderer: no channel named: this orderer orders channels ch1, ch2; name one"},
	} {
		err := srv.Deliver(&api.DeliverRequest{Channel: tc.channel}, nil)
		if st := status.Convert(err); st.Code() != tc.code || st.Message() != tc.want {
			t.Errorf("Deliver of channel %q: %v, want %v %q", tc.channel, err, tc.code, tc.want)
		}
	}

	one, err := NewChannels(a)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = one.Server().Submit(ctx, &api.SubmitRequest{Transaction: nope})
	if err != nil || resp.GetStatus() != StatusNotFound || !strings.Contains(resp.GetMessage(), `tx `) || !strings.Contains(resp.GetMessage(), `is for channel "nope", this orderer orders channel "ch1"`) {
		t.Errorf("single-channel Submit for channel nope: %v, %v", resp, err)
	}
}

// TestClusterConnsShared: channels that reach the same orderer share one
// connection, which stays open until the last of them lets it go.
func TestClusterConnsShared(t *testing.T) {
	c := NewClusterConns(&tls.Config{MinVersion: tls.VersionTLS13}) // grpc.NewClient dials lazily: nothing connects here
	c1, rel1, err := c.get("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	c2, rel2, err := c.get("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	_, rel3, err := c.get("127.0.0.1:2")
	if err != nil {
		t.Fatal(err)
	}
	if c1 != c2 || c.Len() != 2 {
		t.Fatalf("two channels to one address got different connections (%v) or %d connections for 2 addresses", c1 != c2, c.Len())
	}
	rel1()
	rel1() // a second release of the same user is a no-op
	if c.Len() != 2 {
		t.Errorf("%d connections after one of two users let go, want 2", c.Len())
	}
	rel2()
	rel3()
	if c.Len() != 0 {
		t.Errorf("%d connections after every user let go, want 0", c.Len())
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	if _, _, err := c.get("127.0.0.1:1"); !errors.Is(err, ErrConnsClosed) {
		t.Errorf("get after Close: %v, want ErrConnsClosed", err)
	}
}

// startOn starts an orderer of channel ch, closed when the test ends.
func startOn(t *testing.T, n *testNet, ch string, batch cut.Config) *Orderer {
	t.Helper()
	store := openStore(t, t.TempDir())
	cfg := n.config(store, batch)
	cfg.Channel = ch
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close(); store.Close() })
	return o
}

// TestChannelsReportRouting: a gateway's empty, report-only SubmitBatch
// names its channel, and with several channels the peer's height goes to
// that channel's pacing alone; one that names none reports nowhere (the
// height would be another channel's).
func TestChannelsReportRouting(t *testing.T) {
	n := newTestNet(t)
	stream := cut.Config{Mode: cut.ModeStream, MaxTxs: 10}
	a, b := startOn(t, n, "ch1", stream), startOn(t, n, "ch2", stream)
	chs, err := NewChannels(a, b)
	if err != nil {
		t.Fatal(err)
	}
	reported := func(o *Orderer) uint64 {
		h, _ := o.pace.Reported("peer0.Org1", o.cfg.Channel)
		return h
	}
	ctx := context.Background()
	if _, err := chs.Server().SubmitBatch(ctx, &api.SubmitBatchRequest{Peer: "peer0.Org1", PeerHeight: 4}); err != nil {
		t.Fatal(err)
	}
	if ha, hb := reported(a), reported(b); ha != 0 || hb != 0 {
		t.Errorf("a report naming no channel reached ch1 (%d) or ch2 (%d); want neither", ha, hb)
	}
	if _, err := chs.Server().SubmitBatch(ctx, &api.SubmitBatchRequest{Peer: "peer0.Org1", PeerHeight: 5, Channel: "ch2"}); err != nil {
		t.Fatal(err)
	}
	if ha, hb := reported(a), reported(b); ha != 0 || hb != 5 {
		t.Errorf("a report for ch2: ch1 has %d, ch2 %d; want 0 and 5", ha, hb)
	}
}
