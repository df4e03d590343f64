package node

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/identity"
)

// TestTLSRefusals: a failed handshake is counted by the sentinel its
// error wraps, not by its text; a certificate refusal is logged at most
// once per reason per tlsLogEvery, with the refusals since, and any
// other failure only at debug level.
func TestTLSRefusals(t *testing.T) {
	expired := x509.CertificateInvalidError{Reason: x509.Expired}
	for _, c := range []struct {
		err  error
		want refusal
	}{
		{fmt.Errorf("%w: %w", ErrUntrustedPeer, fmt.Errorf("wrapped: %w", identity.ErrRevoked)), refusedRevoked},
		{fmt.Errorf("%w: %w", ErrUntrustedPeer, identity.ErrOrgRemoved), refusedOrgRemoved},
		{fmt.Errorf("%w: client certificate: %w", ErrUntrustedPeer, expired), refusedExpired},
		{fmt.Errorf("%w: not signed by any CA of the channel", ErrUntrustedPeer), refusedUntrusted},
		{errors.New("identity: certificate revoked"), refusedOther}, // the text alone counts for nothing
		{io.EOF, refusedOther},
	} {
		if got := classifyHandshake(c.err); got != c.want {
			t.Errorf("classifyHandshake(%v) = %s, want %s", c.err, refusalNames[got], refusalNames[c.want])
		}
	}

	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var r tlsRefusals
	removed := fmt.Errorf("%w: %w", ErrUntrustedPeer, identity.ErrOrgRemoved)
	t0 := time.Unix(1000, 0)
	r.note(log, "a", removed, t0)
	r.note(log, "b", removed, t0.Add(tlsLogEvery-time.Nanosecond))
	r.note(log, "c", io.EOF, t0)
	r.note(log, "d", removed, t0.Add(tlsLogEvery))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "remote=a") || !strings.Contains(lines[0], "refused_since_last_logged=0") ||
		!strings.Contains(lines[1], "remote=d") || !strings.Contains(lines[1], "refused_since_last_logged=1") || !strings.Contains(lines[1], "reason=org_removed") {
		t.Errorf("log:\n%s\nwant a's and d's refusals, d's counting b's", buf.String())
	}
	if m := r.metrics(); m != (TLSMetrics{OrgRemoved: 3, Other: 1}) {
		t.Errorf("metrics %+v, want 3 org_removed and 1 other", m)
	}
}
