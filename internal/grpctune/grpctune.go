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
package grpctune

import "google.golang.org/grpc"

// Window is the static stream and connection flow-control window: far
// above what a connection has in flight in steady state (a few hundred
// calls of a few KiB), so windows never throttle normal traffic.
const Window = 16 << 20

// DialOptions are the transport options of every strand client connection.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithStaticStreamWindowSize(Window), grpc.WithStaticConnWindowSize(Window)}
}

// ServerOptions are the transport options of every strand gRPC server.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.StaticStreamWindowSize(Window), grpc.StaticConnWindowSize(Window)}
}
