package external

import "errors"

// Sentinel errors, checked with errors.Is. A call's error wraps one of
// the last five; a contract's own failure is a *contract.Error instead.
var (
	ErrBadOptions = errors.New("external: invalid options")
	// ErrPackage is a connection package that does not decode: not
	// JSON, a bad address, no CA certificate.
	ErrPackage = errors.New("external: malformed connection package")

	// ErrUnreachable: the contract server could not be connected to (no
	// server at the address, a TLS handshake refused either way, no
	// answer to the protocol's hello before the call's deadline).
	ErrUnreachable = errors.New("external: contract server unreachable")
	// ErrDeadline: the server did not end the call within
	// Options.Timeout.
	ErrDeadline = errors.New("external: contract server passed the call deadline")
	// ErrConnLost: the connection broke while the call ran (the server
	// crashed or closed the stream).
	ErrConnLost = errors.New("external: connection to the contract server lost mid-call")
	// ErrProtocol: the server broke the protocol (a message of no kind,
	// a second request before its answer, a wrong version).
	ErrProtocol = errors.New("external: contract server broke the protocol")
	// ErrClosed: the runtime was closed.
	ErrClosed = errors.New("external: runtime closed")
)
