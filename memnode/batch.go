package memnode

import (
	"sync"

	"github.com/strand-ledger/strand/api"
)

// maxReadCalls is how many multi-gets a client has in flight at once, of
// each kind (values, versions only). Reads that miss the cache while
// that many are in flight wait and go together, in one call, when one
// returns.
//
// Why: a remote read's cost is mostly the message's, not the key's (its
// frames, TLS records, the goroutine hand-offs and syscalls at both
// ends; with a unary call each, before the read stream, about 0.2
// core-ms each end on this machine for a 10 KB value), and the memory
// node is a process of its own, so every message wakes it. Under light load a read is sent at once; under heavy load
// calls carry more keys each, so the calls per second level off instead
// of rising with the load. Two in flight, not one, so that one slow call
// (a storage-tier read from disk) does not hold up every other read.
const maxReadCalls = 2

// readBatcher joins the reads that wait for a call slot into one call.
// Invariant: a queued read is sent by the call that takes it from the
// queue, and a call is started whenever a slot frees and the queue is not
// empty, so no read waits for a call that will not come.
type readBatcher struct {
	mu    sync.Mutex
	kinds [2]batchQueue // [0]: values, [1]: versions only
}

type batchQueue struct {
	inflight int
	queue    []*pendingRead
}

// maxBatchKeys bounds the keys of a call that joins reads: reads are
// taken from the queue, oldest first, while they fit (a read larger
// than the bound goes alone), so that joining never makes a message
// over the bounds that each read alone keeps.
const maxBatchKeys = 128

// take removes and returns the oldest queued reads that fit one call.
func (q *batchQueue) take() []*pendingRead {
	n, keys := 0, 0
	for n < len(q.queue) && (n == 0 || keys+len(q.queue[n].keys) <= maxBatchKeys) {
		keys += len(q.queue[n].keys)
		n++
	}
	out := q.queue[:n:n]
	q.queue = q.queue[n:]
	if len(q.queue) == 0 {
		q.queue = nil
	}
	return out
}

// pendingRead is one read's keys and, once its call returned, its answer.
type pendingRead struct {
	keys   []*api.MemKey
	done   chan struct{}
	height uint64
	values []*api.MemValue // one per key
	err    error
}

// call is what a batch of reads costs: one multi-get of keys, which
// answers the node's height and one value per key, or an error.
type call func(keys []*api.MemKey, versionsOnly bool) (uint64, []*api.MemValue, error)

// get reads keys with do, alone or with other reads, and returns the
// height the node read at and a value for each key.
func (b *readBatcher) get(keys []*api.MemKey, versionsOnly bool, do call) (uint64, []*api.MemValue, error) {
	p := &pendingRead{keys: keys}
	q := &b.kinds[0]
	if versionsOnly {
		q = &b.kinds[1]
	}
	b.mu.Lock()
	if q.inflight < maxReadCalls {
		q.inflight++
		b.mu.Unlock()
		b.send([]*pendingRead{p}, q, versionsOnly, do)
		return p.height, p.values, p.err
	}
	p.done = make(chan struct{})
	q.queue = append(q.queue, p)
	b.mu.Unlock()
	<-p.done
	return p.height, p.values, p.err
}

// send makes one call for the reads of batch, frees its slot or takes
// the reads queued meanwhile, and then hands each read its answer: so a
// read that has its answer never sees its call's slot still held. The
// queued reads go on in this goroutine, or in the background when the
// batch's first read is its caller's, which has its answer.
func (b *readBatcher) send(batch []*pendingRead, q *batchQueue, versionsOnly bool, do call) {
	for {
		keys := batch[0].keys
		if len(batch) > 1 {
			keys = make([]*api.MemKey, 0, len(batch)*len(batch[0].keys))
			for _, p := range batch {
				keys = append(keys, p.keys...)
			}
		}
		height, values, err := do(keys, versionsOnly)
		b.mu.Lock()
		next := q.take()
		if len(next) == 0 {
			q.inflight--
		}
		b.mu.Unlock()
		for _, p := range batch {
			p.height, p.err = height, err
			if err == nil {
				p.values, values = values[:len(p.keys):len(p.keys)], values[len(p.keys):]
			}
			if p.done != nil {
				close(p.done)
			}
		}
		if len(next) == 0 {
			return
		}
		if batch[0].done == nil {
			go b.send(next, q, versionsOnly, do)
			return
		}
		batch = next
	}
}
