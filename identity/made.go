package identity

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/strand-ledger/strand/api"
)

// maxRememberedSig is the longest signature a Signer remembers: a DER
// ECDSA P-256 signature is at most 72 bytes, an Ed25519 one 64.
const maxRememberedSig = 72

// made is a bounded record of the signatures one Signer produced lately,
// by SHA-256 of the signed bytes. A peer's endorsements come back to it in
// blocks, and its committer would otherwise check every one of them
// again: one signature check in four of a 2-org transaction's at each
// peer (see Signer.Made for why skipping it cannot change a verdict).
//
// Invariants: index maps a digest to the slot that holds it, and only
// while it does; slots are overwritten oldest first (next), so memory is
// at most cap slots and the index never points at a reused slot.
type made struct {
	mu    sync.Mutex
	slots []madeSig // grows to cap, then is reused in order
	next  int
	cap   int
	index map[[32]byte]int

	recorded, recognized atomic.Int64
}

type madeSig struct {
	digest [32]byte
	sig    [maxRememberedSig]byte
	n      uint8 // length of sig; 0 once recognised (the slot is free)
}

func (m *made) record(digest *[32]byte, sig []byte) {
	if len(sig) > maxRememberedSig || len(sig) == 0 {
		return
	}
	m.recorded.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.slots) < m.cap {
		m.slots = append(m.slots, madeSig{})
	}
	s := &m.slots[m.next]
	if s.n != 0 && m.index[s.digest] == m.next {
		delete(m.index, s.digest)
	}
	s.digest, s.n = *digest, uint8(len(sig))
	copy(s.sig[:], sig)
	m.index[*digest] = m.next
	m.next = (m.next + 1) % m.cap
}

// take reports whether sig over digest is recorded, and forgets it if so:
// an endorsement is in one transaction, and a replay of it is checked in
// full, with the same answer.
func (m *made) take(digest []byte, sig []byte) bool {
	var d [32]byte
	copy(d[:], digest)
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.index[d]
	if !ok {
		return false
	}
	s := &m.slots[i]
	if !bytes.Equal(s.sig[:s.n], sig) {
		return false
	}
	delete(m.index, d)
	s.n = 0
	m.recognized.Add(1)
	return true
}

// Remember makes s record its last n signatures (n > 0), for Made. It must
// be called before s signs anything and at most once. A peer remembers its
// endorsements: 8,192 of them (under 1.5 MiB once all are held) outlast
// the time from endorsement to commit by seconds even at 3,000 tx/s.
func (s *Signer) Remember(n int) {
	if n > 0 {
		s.made = &made{cap: n, index: make(map[[32]byte]int)}
	}
}

// Made reports whether s itself signed msg with signature sig lately,
// under the identity id (the same certificate bytes): then sig is valid
// over msg for id's key, and checking it could only say so again. The
// signature is forgotten once reported. False when s does not remember
// (Remember), for another identity, or once the record has moved on; the
// caller then checks the signature as usual.
//
// Why a verdict cannot change: s's key matches its certificate
// (LoadSigner), Sign produces only signatures Verify accepts (low-S
// ECDSA; Ed25519 signatures valid under RFC 8032 are valid under ZIP-215),
// and the record holds exactly what Sign returned for these bytes' SHA-256
// (other bytes with the same SHA-256 would be a collision, which the hash
// chain, tx ids and ECDSA itself already assume away). Whether id is a
// valid member, revoked, or counts for a policy is still the caller's to
// check.
func (s *Signer) Made(id *api.Identity, msg *Message, sig []byte) bool {
	if s == nil || s.made == nil || id == nil || !bytes.Equal(id.Cert, s.id.Cert) {
		return false
	}
	return s.made.take(msg.sha256(), sig)
}

// MadeMetrics counts a remembering Signer's record (Remember).
type MadeMetrics struct {
	// Recorded counts signatures the signer made and remembered.
	Recorded int64 `metric:"counter"`
	// Recognized counts signatures Made found in the record: checks the
	// node did not need to make (a peer's own endorsements, back in blocks).
	Recognized int64 `metric:"counter"`
}

// MadeMetrics returns the counters of s's record; zero when s does not
// remember.
func (s *Signer) MadeMetrics() MadeMetrics {
	if s == nil || s.made == nil {
		return MadeMetrics{}
	}
	return MadeMetrics{Recorded: s.made.recorded.Load(), Recognized: s.made.recognized.Load()}
}
