package orderer

import (
	"sync"
	"time"
)

// Pacing a stream-mode orderer by its peers (see "Pacing by the peers" in
// doc.go): gateways report their peer's committed height with each submit,
// and the loop holds its next cut while a peer that reported recently is
// more than paceBacklog blocks behind the blocks cut so far.
const (
	// paceBacklog is the most blocks a peer may have left to commit when
	// the next block is cut: one in its pipeline while the new one arrives.
	paceBacklog = 1
	// paceFresh is how long a report counts: a peer whose gateway stopped
	// submitting (idle, or down) no longer holds the others back.
	paceFresh = 100 * time.Millisecond
	// paceMaxHold bounds a hold, so that a report that never comes, or a
	// wrong one, costs a block at most this much latency. Gateways report
	// after every commit, so a hold normally ends when the peer catches up;
	// the bound matters only when they do not. At 5 ms, four holds in five
	// ran out under a saturating load (a peer took longer than that to
	// commit a block), the blocks stayed small and the cores idled 9–11%;
	// at 20 ms blocks grew 14% and throughput 0–13% (two alternated pairs
	// of passes at 64 and 128 clients, see docs/streaming.md).
	paceMaxHold = 20 * time.Millisecond
	// paceMaxPeers bounds the reporters remembered, and paceMaxName their
	// names' bytes; beyond them, reports are ignored.
	paceMaxPeers = 1024
	paceMaxName  = 256
)

// pacer holds the peers' reported heights. Safe for concurrent use.
type pacer struct {
	mu    sync.Mutex
	peers map[string]heightReport
}

type heightReport struct {
	height uint64
	at     time.Time
}

// report records that peer had committed height blocks at now. A report
// lower than the last one from the same peer within paceFresh is ignored
// (reports race each other from concurrent submits), and so is a name
// over paceMaxName bytes.
func (p *pacer) report(peer string, height uint64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.peers == nil {
		p.peers = make(map[string]heightReport)
	}
	old, ok := p.peers[peer]
	switch {
	case len(peer) > paceMaxName, !ok && len(p.peers) >= paceMaxPeers:
		return
	case ok && height < old.height && now.Sub(old.at) < paceFresh:
		return
	}
	p.peers[peer] = heightReport{height: height, at: now}
}

// behind reports whether a peer that reported within paceFresh of now is
// more than paceBacklog blocks short of cut, the height the blocks cut so
// far reach.
func (p *pacer) behind(cut uint64, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, r := range p.peers {
		if now.Sub(r.at) >= paceFresh {
			delete(p.peers, name)
			continue
		}
		if r.height+paceBacklog < cut {
			return true
		}
	}
	return false
}
