package mux_test

import (
	"context"
	"crypto/tls"
	"net"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/mux"
	"github.com/strand-ledger/strand/node"
)

type echo struct{ api.UnimplementedOrdererServer }

func (echo) Submit(context.Context, *api.SubmitRequest) (*api.SubmitResponse, error) {
	return &api.SubmitResponse{Status: 200}, nil
}

// tlsPair returns mutual-TLS configurations of one org's CA.
func tlsPair(b *testing.B) (server, client *tls.Config) {
	ca, err := identity.NewCA("Org1", identity.ECDSAP256)
	if err != nil {
		b.Fatal(err)
	}
	caPEM, _, err := ca.MarshalPEM()
	if err != nil {
		b.Fatal(err)
	}
	cert, key, err := ca.IssueTLS("peer0", identity.RolePeer, []string{"127.0.0.1"})
	if err != nil {
		b.Fatal(err)
	}
	server, client, err = node.TLSConfigs(cert, key, [][]byte{caPEM})
	if err != nil {
		b.Fatal(err)
	}
	return server, client
}

// benchSubmit makes Submit calls of a 1,200-byte transaction (a Smallbank
// transaction's size) from 64 goroutines over mutual TLS, and reports the
// process's CPU time per call: client and server together.
func benchSubmit(b *testing.B, wrap bool) {
	stls, ctls := tlsPair(b)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(stls)))
	api.RegisterOrdererServer(mux.NewServer(srv), echo{})
	go srv.Serve(lis)
	defer srv.Stop()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(ctls)))
	if err != nil {
		b.Fatal(err)
	}
	var conn grpc.ClientConnInterface = cc
	if wrap {
		conn = mux.NewConn(cc)
	}
	defer cc.Close()
	client := api.NewOrdererClient(conn)
	req := &api.SubmitRequest{Transaction: make([]byte, 1200)}
	for range 10 { // connect, and open the stream
		if _, err := client.Submit(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	b.SetParallelism(32)
	b.ResetTimer()
	t0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := client.Submit(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64((cpuTime()-t0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/call")
}

func BenchmarkUnary(b *testing.B)  { benchSubmit(b, false) }
func BenchmarkStream(b *testing.B) { benchSubmit(b, true) }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
