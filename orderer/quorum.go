package orderer

import (
	"fmt"
	"sort"
	"strings"
)

// quorum is the Raft membership as one orderer sees it: a leader needs
// the votes of a majority of the members, so an orderer that reaches
// fewer than that many (itself included) can wait forever, and the user
// must be told to start the others rather than to retry.
type quorum struct {
	members, needed int
	reached         []string // other members whose Raft stream is open
	unreached       []string
}

// quorum returns the membership as this orderer sees it now.
func (t *transport) quorum() quorum {
	links := t.links()
	q := quorum{members: len(links) + 1}
	q.needed = q.members/2 + 1
	for _, l := range links {
		name := l.p.Name
		if name == "" {
			name = fmt.Sprintf("raft id %d", l.p.ID)
		}
		if l.up.Load() {
			q.reached = append(q.reached, name)
		} else {
			q.unreached = append(q.unreached, name)
		}
	}
	sort.Strings(q.reached)
	sort.Strings(q.unreached)
	return q
}

// String says why a leader is missing: a majority that cannot form, with
// who is unreachable and what to do, or an election under way.
func (q quorum) String() string {
	reach := 1 + len(q.reached)
	if reach < q.needed {
		return fmt.Sprintf("a leader needs a majority, %d of the %d orderers, and this one reaches %d (itself%s; not %s): start the others (`strand net up` restarts them) and retry",
			q.needed, q.members, reach, prefixed(", ", q.reached), strings.Join(q.unreached, ", "))
	}
	return fmt.Sprintf("election under way (this orderer reaches %d of the %d orderers, %d needed); retry shortly", reach, q.members, q.needed)
}

func prefixed(sep string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return sep + strings.Join(names, ", ")
}

// noLeader is the refusal of a Raft member that knows no leader; what
// names the refused request ("tx 1a2b…: "), or is empty.
func (o *Orderer) noLeader(what string) error {
	return fmt.Errorf("%w: %schannel %q has no Raft leader now: %s", ErrUnavailable, what, o.cfg.Channel, o.raft.tr.quorum())
}
