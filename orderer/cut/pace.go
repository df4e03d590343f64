package cut

import (
	"sync"
	"time"
)

// Pacing a stream-mode orderer by its peers (see "Pacing by the peers" in
// the orderer's doc.go): gateways report their peer's committed height with
// each submit, and Flow holds its next cut while a peer that reported
// recently is more than PaceBacklog blocks behind the blocks cut so far.
const (
	// PaceBacklog is the most blocks a peer may have left to commit when
	// the next block is cut: one in its pipeline while the new one arrives.
	PaceBacklog = 1
	// PaceFresh is how long a report counts: a peer whose gateway stopped
	// submitting (idle, or down) no longer holds the others back.
	PaceFresh = 100 * time.Millisecond
	// PaceMaxHold bounds a hold, so that a report that never comes, or a
	// wrong one, costs a block at most this much latency. Gateways report
	// after every commit, so a hold normally ends when the peer catches up;
	// the bound matters only when they do not. At 5 ms, four holds in five
	// ran out under a saturating load (a peer took longer than that to
	// commit a block), the blocks stayed small and the cores idled 9–11%;
	// at 20 ms blocks grew 14% and throughput 0–13% (two alternated pairs
	// of passes at 64 and 128 clients, see docs/streaming.md).
	PaceMaxHold = 20 * time.Millisecond
	// paceMaxPeers bounds the reporters remembered, and paceMaxName their
	// names' bytes; beyond them, reports are ignored.
	paceMaxPeers = 1024
	paceMaxName  = 256
)

// Pacer holds the peers' reported heights. It reads no clock: time is an
// argument. Safe for concurrent use (gRPC handlers report, the loop asks).
type Pacer struct {
	mu    sync.Mutex
	peers map[string]heightReport
}

type heightReport struct {
	height uint64
	at     time.Time
}

// Report records that peer had committed height blocks at now. A report
// lower than the last one from the same peer within PaceFresh is ignored
// (reports race each other from concurrent submits), and so is a name
// over paceMaxName bytes.
func (p *Pacer) Report(peer string, height uint64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.peers == nil {
		p.peers = make(map[string]heightReport)
	}
	old, ok := p.peers[peer]
	switch {
	case len(peer) > paceMaxName, !ok && len(p.peers) >= paceMaxPeers:
		return
	case ok && height < old.height && now.Sub(old.at) < PaceFresh:
		return
	}
	p.peers[peer] = heightReport{height: height, at: now}
}

// Reported returns the last height peer reported, and whether one is
// remembered.
func (p *Pacer) Reported(peer string) (uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.peers[peer]
	return r.height, ok
}

// Behind reports whether a peer that reported within PaceFresh of now is
// more than PaceBacklog blocks short of cut, the height the blocks cut so
// far reach. Reports older than PaceFresh are forgotten.
func (p *Pacer) Behind(cut uint64, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, r := range p.peers {
		if now.Sub(r.at) >= PaceFresh {
			delete(p.peers, name)
			continue
		}
		if r.height+PaceBacklog < cut {
			return true
		}
	}
	return false
}
