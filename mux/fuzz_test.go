package mux

import (
	"context"
	"testing"

	"google.golang.org/grpc"

	"github.com/strand-ledger/strand/api"
)

// FuzzInvoke feeds arbitrary calls to a server: every call gets a reply
// with its id, and nothing panics.
func FuzzInvoke(f *testing.F) {
	f.Add(uint64(1), "/strand.api.Orderer/Submit", []byte{0x0a, 0x02, 'o', 'k'}, int64(0))
	f.Add(uint64(2), "/strand.api.Orderer/Submit", []byte{0x0a, 0xff}, int64(5))
	f.Add(uint64(3), "/nope", []byte(nil), int64(-1))
	srv := grpc.NewServer()
	s := NewServer(srv)
	api.RegisterOrdererServer(s, &orderer{release: make(chan struct{})})
	f.Fuzz(func(t *testing.T, id uint64, method string, req []byte, timeout int64) {
		if timeout > 1000 || timeout < -1000 { // keep "wait" calls short
			timeout %= 1000
		}
		if timeout <= 0 {
			timeout = 1000
		}
		r := s.invoke(context.Background(), &api.Call{Id: id, Method: method, Request: req, TimeoutUs: timeout})
		if r.GetId() != id {
			t.Fatalf("reply id %d, want %d", r.GetId(), id)
		}
		if r.GetCode() == 0 && method != "/strand.api.Orderer/Submit" {
			t.Fatalf("method %q answered OK", method)
		}
	})
}
