// Package mux carries the unary calls of strand's gRPC services over one
// long-lived bidirectional stream per connection (service api.Mux).
//
// Why: a unary gRPC call over TLS opens an HTTP/2 stream, encodes and
// decodes headers and trailers and starts a goroutine; on this machine it
// costs about 61 µs of CPU, client and server together, against about
// 29 µs for the same call carried by this package over a stream that is
// already open (BenchmarkUnary and BenchmarkStream: 1,200-byte requests,
// 64 callers, mutual TLS). A transaction makes five calls (endorse, the
// remote endorsement, submit, the orderer's admission and the commit
// status), so this saves a tenth of the CPU a transaction costs. Fabric's Broadcast is a stream
// for the same reason.
//
// Conn is a grpc.ClientConnInterface, so the generated clients run over
// it unchanged: api.NewOrdererClient(mux.NewConn(cc)). Server is a
// grpc.ServiceRegistrar that registers each service on the gRPC server
// as usual and also records its unary methods, which it then serves over
// Mux.Calls by their full method names. Status codes, messages and
// deadlines cross the stream exactly as they cross a unary call; streaming
// methods (Deliver, BlockEvents) stay plain gRPC streams.
//
// # Invariants
//
//   - One stream per Conn at a time. Calls are matched to replies by id,
//     never by order, so a slow call (CommitStatus waits for a commit)
//     does not hold up the others.
//   - A call in flight when its stream breaks fails with Unavailable, as a
//     unary call on a broken connection does: the server may or may not
//     have run it. The next call opens a new stream.
//   - A server without Mux (codes.Unimplemented on the stream) is called
//     with plain unary calls from then on, so mixed versions interoperate.
//   - A request that might not fit the receive limit of a client server
//     (api.MaxRequestMessage) goes as a plain unary call: gRPC refuses an
//     oversized message on a stream by ending the stream, which would fail
//     every call on it, other callers' too.
//   - Server: each stream runs at most MaxInFlight calls at once; beyond
//     that it stops reading, and HTTP/2 flow control holds the client
//     back. The Server also budgets the bytes of the requests its calls
//     hold, over all its streams (MaxInFlightBytes): a stream whose next
//     request does not fit waits, unread, until calls finish. Together
//     with the gRPC server's receive limit this bounds what Mux calls
//     hold, however slow their handlers. A request the budget cannot fit
//     waits until nothing else is in flight and then runs alone.
//   - Calls run on reused goroutines, whose grown stacks are kept (a
//     fresh goroutine per call spent 4% of a peer's CPU growing stacks).
//     A stream's handler returns only after its calls have replied, so no
//     reply is sent on a finished stream.
package mux
