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

// DialOptions are the transport options of every strand client connection.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithStaticStreamWindowSize(Window), grpc.WithStaticConnWindowSize(Window)}
}

// ServerOptions are the transport options of every strand gRPC server.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.StaticStreamWindowSize(Window), grpc.StaticConnWindowSize(Window)}
}
