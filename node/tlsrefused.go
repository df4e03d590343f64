package node

import (
	"crypto/x509"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/identity"
)

// TLSMetrics counts the TLS handshakes a node's listener did not
// complete, by reason. A refused certificate is also logged (warning,
// at most once per reason per tlsLogEvery, with the count since).
type TLSMetrics struct {
	// TLS handshakes the node's listener refused or that failed, by
	// reason (revoked: the caller's certificate is revoked by its org's
	// CRL).
	Revoked    uint64 `metric:"counter,family=refused,reason=revoked"`
	OrgRemoved uint64 `metric:"counter,family=refused,reason=org_removed"` // the caller's org was removed from the channel
	Expired    uint64 `metric:"counter,family=refused,reason=expired"`     // the caller's certificate has expired
	// The caller's certificate is not signed by a CA of a member org, is
	// not of the org its CA names, or is missing.
	Untrusted uint64 `metric:"counter,family=refused,reason=untrusted"`
	// A handshake that failed without a certificate refusal: a timeout,
	// a client that hung up or refused the node's certificate.
	Other uint64 `metric:"counter,family=refused,reason=other"`
}

// refusal is why a handshake failed (TLSMetrics' reasons, in order).
type refusal int

const (
	refusedRevoked refusal = iota
	refusedOrgRemoved
	refusedExpired
	refusedUntrusted
	refusedOther
	nRefusals
)

var refusalNames = [nRefusals]string{"revoked", "org_removed", "expired", "untrusted", "other"}

// classifyHandshake names why a server-side handshake failed, by the
// sentinels the node's verification wraps (WithRevocation, TLSConfigs):
// not by the error's text.
func classifyHandshake(err error) refusal {
	var inv x509.CertificateInvalidError
	switch {
	case errors.Is(err, identity.ErrRevoked):
		return refusedRevoked
	case errors.Is(err, identity.ErrOrgRemoved):
		return refusedOrgRemoved
	case errors.As(err, &inv) && inv.Reason == x509.Expired:
		return refusedExpired
	case errors.Is(err, ErrUntrustedPeer):
		return refusedUntrusted
	}
	return refusedOther
}

// tlsLogEvery bounds the refusal warnings of one reason: a client that
// retries a refused certificate in a loop must not flood the log.
const tlsLogEvery = 10 * time.Second

// tlsRefusals counts a listener's failed handshakes and logs certificate
// refusals at a bounded rate.
type tlsRefusals struct {
	counts [nRefusals]atomic.Uint64
	mu     struct {
		sync.Mutex
		logged [nRefusals]time.Time // when each reason was last logged
		quiet  [nRefusals]uint64    // refusals since, not logged
	}
}

// note counts a failed handshake from remote and logs it: a certificate
// refusal as a warning, unless one of its reason was logged less than
// tlsLogEvery before now; any other failure at debug level.
func (t *tlsRefusals) note(log *slog.Logger, remote string, err error, now time.Time) {
	r := classifyHandshake(err)
	t.counts[r].Add(1)
	if r == refusedOther {
		log.Debug("TLS handshake failed", "remote", remote, "err", err)
		return
	}
	t.mu.Lock()
	if now.Sub(t.mu.logged[r]) < tlsLogEvery {
		t.mu.quiet[r]++
		t.mu.Unlock()
		return
	}
	quiet := t.mu.quiet[r]
	t.mu.logged[r], t.mu.quiet[r] = now, 0
	t.mu.Unlock()
	log.Warn("refused a TLS handshake: the caller's certificate is not accepted", "reason", refusalNames[r], "remote", remote,
		"err", err, "refused_since_last_logged", quiet)
}

// metrics is a snapshot of the counts.
func (t *tlsRefusals) metrics() TLSMetrics {
	return TLSMetrics{
		Revoked: t.counts[refusedRevoked].Load(), OrgRemoved: t.counts[refusedOrgRemoved].Load(),
		Expired: t.counts[refusedExpired].Load(), Untrusted: t.counts[refusedUntrusted].Load(), Other: t.counts[refusedOther].Load(),
	}
}

// TLSMetrics returns the node's failed TLS handshakes by reason (zero
// before it serves).
func (b *base) TLSMetrics() TLSMetrics {
	if b.lis == nil {
		return TLSMetrics{}
	}
	return b.lis.refusals.metrics()
}
