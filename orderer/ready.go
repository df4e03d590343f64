package orderer

import "fmt"

// Ready says whether this orderer can order transactions now: nil, or
// why not. A node's /readyz serves it. A single-node orderer is ready
// while it runs; a Raft member also needs a leader (itself or another
// member) and must still be a member.
func (o *Orderer) Ready() error {
	if e := o.fatal.Load(); e != nil {
		return fmt.Errorf("orderer: failed, restart it to continue from the block store: %w", *e)
	}
	if e := o.removed.Load(); e != nil {
		return *e
	}
	if o.isClosed() {
		return fmt.Errorf("%w: the orderer of channel %q is closing", ErrClosed, o.cfg.Channel)
	}
	if o.raft == nil {
		return nil
	}
	if o.raft.leader.Load() == 0 {
		return o.noLeader("")
	}
	return nil
}
