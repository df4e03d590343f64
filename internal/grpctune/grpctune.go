// Package grpctune holds the gRPC transport settings every strand
// connection uses, client and server side alike.
//
// Flow-control windows are static. With gRPC's default dynamic windows,
// each side estimates the bandwidth-delay product by sending a PING with
// received data whenever no estimate is in flight, and its peer answers
// it: on strand's long-lived connections, where api.Mux carries every call
// of a connection on one stream, that is up to two extra frames per
// message burst, each a write system call. On loopback and LAN links a
// write also runs the receiver's TCP processing, so those frames cost as
// much as the calls they ride along. A fixed window large enough for the
// biggest message in flight (a block, api.MaxBlockMessage, is the outlier;
// it simply waits for window updates) needs no estimate.
//
// Received messages are assembled in buffers from a pool with a tier at
// every power of two from 256 bytes to 16 MiB (BufferPool), which this
// package makes gRPC's default pool when it is loaded: the proto codec
// takes its buffers from the default pool whatever a connection's
// options say. gRPC's own pool has tiers of 256 B, 4, 16 and 32 KiB and
// 1 MiB, and clears a pooled buffer's whole capacity before handing it
// out: every message between 32 KiB and 1 MiB (a batch of submissions, a
// block of a few dozen transactions, a busy Mux stream's call) cleared a
// whole MiB. With a tier at every power of two a message clears at most
// twice its own size.
package grpctune

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

// init installs BufferPool before any connection or server exists (the
// setter is not safe once gRPC is in use). Every strand process, and any
// program embedding strand's nodes or client, loads this package.
func init() { experimental.SetDefaultBufferPool(BufferPool) }

// Window is the static stream and connection flow-control window: far
// above what a connection has in flight in steady state (a few hundred
// calls of a few KiB), so windows never throttle normal traffic.
const Window = 16 << 20

// ClientStreamWindow is the static stream window of the gRPC servers that
// face clients, peers and admins (node's client servers): what a caller
// may push on one stream ahead of the handler reading it. A server holds
// what arrives, so this bounds what a stream that stalls, or that the
// server refuses on its length prefix, can make it buffer: with Window,
// sixteen half-sent oversized messages left 16 MiB each in flight at the
// moment of their refusal. Requests are at most api.MaxRequestMessage and
// the server reads them as they come, so a smaller window costs a larger
// request a few window updates, nothing more.
const ClientStreamWindow = 1 << 20

// BufferPool is the pool every strand connection and server receives
// messages into: a tier at each power of two from 2^8 to 2^24 bytes
// (larger messages are allocated, as gRPC's own pool does past its top
// tier).
var BufferPool = func() mem.BufferPool {
	var exps []uint8
	for e := uint8(8); e <= 24; e++ {
		exps = append(exps, e)
	}
	p, err := mem.NewBinaryTieredBufferPool(exps...)
	if err != nil {
		panic(fmt.Sprintf("grpctune: buffer pool: %v", err)) // exponents are constants below the word size
	}
	return p
}()

// DialOptions are the transport options of every strand client connection.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithStaticStreamWindowSize(Window), grpc.WithStaticConnWindowSize(Window)}
}

// ServerOptions are the transport options of every strand gRPC server.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.StaticStreamWindowSize(Window), grpc.StaticConnWindowSize(Window)}
}
