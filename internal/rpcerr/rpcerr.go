// Package rpcerr shortens gRPC transport errors for people: grpc-go's
// "rpc error: code = Unavailable desc = connection error: desc =
// \"transport: Error while dialing: dial tcp 127.0.0.1:7051: connect:
// connection refused\"" says "unreachable (connection refused)".
package rpcerr

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Unreachable reports whether err is a gRPC call that found nobody
// answering: Unavailable (refused, reset, no route) or a deadline that
// passed with no answer.
func Unreachable(err error) bool {
	s, ok := status.FromError(err)
	return ok && err != nil && (s.Code() == codes.Unavailable || s.Code() == codes.DeadlineExceeded)
}

// Short is err in few words: for a gRPC status, "unreachable (connection
// refused)", "timed out (...)" or "<code>: <message>"; any other error as
// it is.
func Short(err error) string {
	s, ok := status.FromError(err)
	if !ok || err == nil {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	switch s.Code() {
	case codes.Unavailable:
		return "unreachable (" + lastCause(s.Message()) + ")"
	case codes.DeadlineExceeded:
		return "timed out (" + lastCause(s.Message()) + ")"
	}
	return s.Code().String() + ": " + s.Message()
}

// lastCause is the innermost part of a transport message: what follows
// its last ": ", unquoted ("connection refused").
func lastCause(msg string) string {
	msg = strings.TrimRight(msg, `"`)
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	if msg == "" {
		return "no reason given"
	}
	return msg
}
