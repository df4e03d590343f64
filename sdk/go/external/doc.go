// Package external is the Go SDK for strand's external contracts: it
// serves a contract.Contract (a contract.NewRouter over a struct, exactly
// as a built-in or WebAssembly contract is written) as a contract server
// that peers dial over gRPC with mutual TLS (protocol: api/contract.proto,
// docs/contracts.md).
//
//	lis, _ := net.Listen("tcp", "127.0.0.1:9999")
//	err := external.Serve(lis, smallbank.New(), tlsConfig)
//
// tlsConfig is the server's side of mutual TLS: its certificate (which
// must chain to the root_cert of the contract's connection package) and
// ClientCAs with ClientAuth tls.RequireAndVerifyClientCert, so that only
// peers of the channel's orgs may call it. ServerTLS builds one from PEM
// files.
//
// Each call runs on a goroutine of its own; its stub's state operations
// are requests to the peer on the call's stream. GetState, range and
// multi-get wait for the peer's answer; PutState, DelState and SetEvent do
// not (the peer applies them in order, and fails the call if it refuses
// one; the stub checks key and value sizes first, as the peer does). A
// call the peer cancelled (its deadline passed) gets ErrCancelled from its
// next state read.
package external
