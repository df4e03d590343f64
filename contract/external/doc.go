// Package external runs contracts that live in servers of their own
// (runtime "external", like Fabric's chaincode-as-a-service, without
// Docker): a contract server in any language speaks the protocol of
// api/contract.proto, and the peer dials it with mutual TLS. A Runtime
// turns a contract definition's connection package (Package: the address
// and the CA the server's certificate must chain to) into a
// contract.Contract, so the endorser runs it like a built-in one.
// docs/contracts.md is the reference; sdk/go/external is the Go server
// side.
//
// Invariants:
//   - The read/write set is built on the peer: the server only asks for
//     state operations, which run on the endorser's stub exactly as a
//     built-in contract's would. Nothing the server says is signed as it
//     is except the call's result payload; validation never trusts it.
//   - The server is pinned by the definition: its certificate must chain
//     to Package.RootCert, which is part of the code hash every org
//     agreed on, and the peer shows its own TLS certificate.
//   - One connection and one Connect stream per package; every call is
//     multiplexed on it by call id. A broken stream fails the calls on it
//     (ErrConnLost) and the next call opens a new one; a server that
//     cannot be reached fails a call at once (ErrUnreachable).
//   - Every call is bounded by Options.Timeout (ErrDeadline); the server
//     is told to drop it (cancel) and its late messages are ignored.
//   - A failure is a named error wrapping one sentinel, counted in
//     Metrics, and never affects other calls or contracts.
//
// The caller's duty: Close the Runtime when its contracts are no longer
// called.
package external
