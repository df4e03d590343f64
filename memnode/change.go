package memnode

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// ErrBadChange marks a Watch message a reader refuses as malformed; test
// with errors.Is. The reader then drops its cache and subscribes again.
var ErrBadChange = errors.New("memnode: bad change message")

// change is a decoded Watch message (api.MemChange).
type change struct {
	height, from, head, epoch uint64
	resync                    bool
	at                        int64    // the node's clock at publication, Unix nanoseconds
	keys                      []string // encoded (statedb.AppendKey)
	namespaces                []string // the namespaces of keys, in the message's order
}

// encodeChange builds the change message of a batch applied from from to
// height at (the node's clock), and the bytes it costs a subscriber's
// buffer. Keys are grouped by namespace, in the order of each
// namespace's first write; a key written twice is named twice.
func encodeChange(writes []statedb.Write, from, height uint64, at int64, epoch uint64) (*api.MemChange, int) {
	m := &api.MemChange{Height: height, From: from, AppliedUnixNano: at, Epoch: epoch}
	size := changeOverhead
	group := make(map[string]*api.MemChangedKeys)
	for _, w := range writes {
		g, ok := group[w.Namespace]
		if !ok {
			g = &api.MemChangedKeys{Namespace: []byte(w.Namespace)}
			group[w.Namespace] = g
			m.Namespaces = append(m.Namespaces, g)
			size += len(w.Namespace) + groupOverhead
		}
		before := len(g.Keys)
		g.Keys = binary.AppendUvarint(g.Keys, uint64(len(w.Key)))
		g.Keys = append(g.Keys, w.Key...)
		size += len(g.Keys) - before
	}
	return m, size
}

// Approximate costs of a change beyond its keys' bytes: the message and
// its fields, and one namespace group.
const (
	changeOverhead = 64
	groupOverhead  = 32
)

// resyncMessage is the message that starts a subscriber over at height.
func resyncMessage(height uint64, at int64, epoch uint64) *api.MemChange {
	return &api.MemChange{Height: height, Resync: true, AppliedUnixNano: at, Epoch: epoch}
}

// decodeChange checks a Watch message and unpacks its keys, encoded.
// Nothing is taken from a message it refuses.
func decodeChange(m *api.MemChange) (change, error) {
	c := change{height: m.GetHeight(), from: m.GetFrom(), head: m.GetHead(), epoch: m.GetEpoch(),
		resync: m.GetResync(), at: m.GetAppliedUnixNano()}
	if c.resync {
		if len(m.GetNamespaces()) != 0 || c.from != 0 {
			return change{}, fmt.Errorf("%w: a resync at height %d with from %d and %d namespace groups; want neither", ErrBadChange, c.height, c.from, len(m.GetNamespaces()))
		}
		return c, nil
	}
	if c.height <= c.from {
		return change{}, fmt.Errorf("%w: a change from height %d to height %d; the height must be above from", ErrBadChange, c.from, c.height)
	}
	for i, g := range m.GetNamespaces() {
		ns := g.GetNamespace()
		if err := statedb.CheckNamespace(string(ns)); err != nil {
			return change{}, fmt.Errorf("%w: change to height %d, group %d: %w", ErrBadChange, c.height, i, err)
		}
		c.namespaces = append(c.namespaces, string(ns))
		for rest := g.GetKeys(); len(rest) > 0; {
			n, w := binary.Uvarint(rest)
			if w <= 0 || n > uint64(len(rest)-w) {
				return change{}, fmt.Errorf("%w: change to height %d, namespace %q: a packed key's length at byte %d overruns the %d bytes of keys",
					ErrBadChange, c.height, ns, len(g.GetKeys())-len(rest), len(g.GetKeys()))
			}
			k := rest[w : w+int(n)]
			rest = rest[w+int(n):]
			enc := make([]byte, 0, len(ns)+1+len(k)) // statedb.AppendKey's layout
			c.keys = append(c.keys, string(append(append(append(enc, ns...), 0), k...)))
		}
	}
	return c, nil
}

// keySeq yields the change's keys, for tiered.Cache.Invalidate.
func (c *change) keySeq(yield func(string) bool) {
	for _, k := range c.keys {
		if !yield(k) {
			return
		}
	}
}
