package rpcerr

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestShort(t *testing.T) {
	refused := status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:46287: connect: connection refused"`)
	for _, c := range []struct {
		err         error
		want        string
		unreachable bool
	}{
		{refused, "unreachable (connection refused)", true},
		{fmt.Errorf("client: endorsing: %w", refused), "unreachable (connection refused)", true},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), "timed out (context deadline exceeded)", true},
		{status.Error(codes.PermissionDenied, "not a member"), "PermissionDenied: not a member", false},
		{errors.New("plain"), "plain", false},
	} {
		if got := Short(c.err); got != c.want {
			t.Errorf("Short(%v) = %q, want %q", c.err, got, c.want)
		}
		if got := Unreachable(c.err); got != c.unreachable {
			t.Errorf("Unreachable(%v) = %v, want %v", c.err, got, c.unreachable)
		}
	}
}
