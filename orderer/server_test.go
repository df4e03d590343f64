package orderer

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/orderer/cut"
)

func TestGRPCRoundTrip(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, cut.Config{MaxTxs: 2, Timeout: 20 * time.Millisecond})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	api.RegisterOrdererServer(srv, NewServer(o))
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := api.NewOrdererClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	stream, err := cl.Deliver(ctx, &api.DeliverRequest{Channel: testChannel, Start: 0})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range keys("g", 3) {
		raw, id := n.tx(t, k)
		resp, err := cl.Submit(ctx, &api.SubmitRequest{Transaction: raw})
		if err != nil || resp.Status != 200 {
			t.Fatalf("Submit: %v, %v", resp, err)
		}
		ids = append(ids, id)
	}
	wrongCh, _ := n.txFor(t, "ch2", n.client1, "x")
	byPeer, _ := n.txFor(t, testChannel, n.peer1, "x")
	for _, c := range []struct {
		raw    []byte
		status int32
	}{{[]byte("junk"), 400}, {wrongCh, 404}, {byPeer, 403}} {
		resp, err := cl.Submit(ctx, &api.SubmitRequest{Transaction: c.raw})
		if err != nil || resp.Status != c.status || resp.Message == "" {
			t.Errorf("Submit refused tx: %v, %v; want status %d with a message", resp, err, c.status)
		}
	}
	var blks []*api.Block
	for got := 0; got < len(ids); {
		msg, err := stream.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		b, err := api.DecodeBlock(msg.Block)
		if err != nil {
			t.Fatal(err)
		}
		blks = append(blks, b)
		got += len(b.Transactions)
	}
	checkChain(t, n.reg, nil, blks)
	if got := txIDs(t, blks); len(got) != 3 || got[0] != ids[0] || got[2] != ids[2] {
		t.Errorf("streamed tx ids %v, want %v", got, ids)
	}

	// stop: the stream ends at the current height.
	once, err := cl.Deliver(ctx, &api.DeliverRequest{Channel: testChannel, Start: 0, Stop: true})
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for {
		if _, err := once.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("stop stream ended with %v, want EOF", err)
			}
			break
		}
		count++
	}
	if count != len(blks) {
		t.Errorf("stop stream sent %d blocks, want %d", count, len(blks))
	}

	bad, err := cl.Deliver(ctx, &api.DeliverRequest{Channel: "nope"})
	if err == nil {
		_, err = bad.Recv()
	}
	if status.Code(err) != codes.NotFound {
		t.Errorf("Deliver of another channel: %v, want NotFound", err)
	}
}
