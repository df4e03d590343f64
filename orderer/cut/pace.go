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

// Pacer holds the peers' reported heights, per channel, and the height
// of the blocks each channel has cut. One Pacer may serve every channel an
// orderer process orders: a peer's backlog is then its blocks not yet
// committed summed over all those channels, because one peer process
// commits them all on the same cores. With three channels under load, a
// pacer per channel let each channel keep its own block in flight at the
// peer, so blocks were cut three times as often and held a third of the
// transactions, and the peer paid per-block costs (a signature check, an
// append and fsync, a state batch) three times per transaction.
//
// It reads no clock: time is an argument. Safe for concurrent use (gRPC
// handlers report, the channels' loops ask).
type Pacer struct {
	mu    sync.Mutex
	peers map[peerChannel]heightReport
	cut   map[string]uint64 // channel → blocks cut
	wakes map[string]func() // channel → its loop's wake-up (Attach)
	// held is when each channel began holding a cut, until it cuts
	// (Cut): when the peers can take one more block, the channel that
	// has held longest takes it.
	held map[string]time.Time
	// backlog is Behind's scratch: blocks not committed, per peer.
	backlog map[string]uint64
}

type peerChannel struct{ peer, channel string }

type heightReport struct {
	height uint64
	at     time.Time
}

// Attach registers channel's loop: wake is called after every report on
// any channel, with the Pacer locked (so it must neither block nor call
// the Pacer), since a peer that caught up on one
// channel may release a cut held on another.
func (p *Pacer) Attach(channel string, wake func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wakes == nil {
		p.wakes = map[string]func(){}
	}
	p.wakes[channel] = wake
}

// Detach forgets channel: its wake-up, its cut height and the reports on
// it (the channel was left, or its orderer closed).
func (p *Pacer) Detach(channel string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.wakes, channel)
	delete(p.cut, channel)
	delete(p.held, channel)
	for k := range p.peers {
		if k.channel == channel {
			delete(p.peers, k)
		}
	}
}

// Report records that peer had committed height blocks of channel at now,
// then wakes the attached loops. A report lower than the last one from the
// same peer on the channel within PaceFresh is ignored (reports race each
// other from concurrent submits), and so is a name over paceMaxName bytes.
func (p *Pacer) Report(peer, channel string, height uint64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.recordLocked(peer, channel, height, now) {
		return
	}
	for _, w := range p.wakes { // non-blocking, and never back into p
		w()
	}
}

func (p *Pacer) recordLocked(peer, channel string, height uint64, now time.Time) bool {
	if p.peers == nil {
		p.peers = make(map[peerChannel]heightReport)
	}
	k := peerChannel{peer, channel}
	old, ok := p.peers[k]
	switch {
	case len(peer) > paceMaxName, !ok && len(p.peers) >= paceMaxPeers:
		return false
	case ok && height < old.height && now.Sub(old.at) < PaceFresh:
		return false
	}
	p.peers[k] = heightReport{height: height, at: now}
	return true
}

// Reported returns the last height peer reported on channel, and whether
// one is remembered.
func (p *Pacer) Reported(peer, channel string) (uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.peers[peerChannel{peer, channel}]
	return r.height, ok
}

// Cut records that channel has cut height blocks (its loop calls it as it
// hands batches on), for the backlog of the other channels' peers.
func (p *Pacer) Cut(channel string, height uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setCutLocked(channel, height)
	delete(p.held, channel)
}

func (p *Pacer) setCutLocked(channel string, height uint64) {
	if p.cut == nil {
		p.cut = map[string]uint64{}
	}
	p.cut[channel] = height
}

// Behind reports whether channel should hold its next cut, at now, with
// cut its height now: while a peer that reported on channel within
// PaceFresh has more than PaceBacklog blocks left to commit, counting
// channel's blocks up to cut and every other channel's blocks cut so far
// that the peer reported on lately; and, when its peers can take another
// block, while another channel whose peers can too has held its cut
// longer (that one goes first, so that channels share the peers fairly).
// Reports older than PaceFresh are forgotten, and so are holds.
func (p *Pacer) Behind(channel string, cut uint64, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setCutLocked(channel, cut)
	if p.held == nil {
		p.held = map[string]time.Time{}
	}
	p.sumBacklogLocked(now)
	since, holding := p.held[channel]
	hold := p.overLocked(channel)
	for c, t := range p.held {
		if hold {
			break
		}
		switch {
		case now.Sub(t) >= PaceFresh:
			delete(p.held, c) // its loop stopped asking
		case c != channel && (!holding || t.Before(since)) && !p.overLocked(c):
			hold = true
		}
	}
	if hold && !holding {
		p.held[channel] = now
	}
	return hold
}

// sumBacklogLocked sums, per peer, the blocks it has left to commit over
// the channels it reported on within PaceFresh of now, forgetting older
// reports.
func (p *Pacer) sumBacklogLocked(now time.Time) {
	if p.backlog == nil {
		p.backlog = map[string]uint64{}
	}
	clear(p.backlog)
	for k, r := range p.peers {
		if now.Sub(r.at) >= PaceFresh {
			delete(p.peers, k)
			continue
		}
		if c := p.cut[k.channel]; c > r.height {
			p.backlog[k.peer] += c - r.height
		}
	}
}

// overLocked reports whether a peer that reported on channel has more
// than PaceBacklog blocks to commit (as sumBacklogLocked summed them).
func (p *Pacer) overLocked(channel string) bool {
	for k := range p.peers {
		if k.channel == channel && p.backlog[k.peer] > PaceBacklog {
			return true
		}
	}
	return false
}
