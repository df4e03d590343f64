package gateway

import (
	"sync"
	"time"

	"github.com/strand-ledger/strand/api"
)

// waiters dispatches commit events to the CommitStatus calls waiting for
// them. One committer subscription serves the whole gateway and a map
// finds the calls each committed tx id settles, so a block wakes only the
// calls it concerns, not every waiting call. Invariants:
//   - A call registers before it looks its tx id up in the block store,
//     and the dispatcher subscribes before it checks registered calls after
//     a lag, so no commit falls between a lookup and the events.
//   - Each registered call receives at most one answer, on a channel with
//     room for it, and is then removed; the dispatcher never blocks on a call.
type waiters struct {
	g  *Gateway
	mu struct {
		sync.Mutex
		calls   map[string][]chan waitResult
		running bool
	}
}

type waitResult struct {
	resp *api.CommitStatusResponse
	err  error
}

// register adds a call waiting for id and starts the dispatcher if needed.
func (w *waiters) register(id string) chan waitResult {
	ch := make(chan waitResult, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.calls == nil {
		w.mu.calls = map[string][]chan waitResult{}
	}
	w.mu.calls[id] = append(w.mu.calls[id], ch)
	w.startLocked()
	return ch
}

// start starts the dispatcher if it is not running.
func (w *waiters) start() {
	w.mu.Lock()
	w.startLocked()
	w.mu.Unlock()
}

func (w *waiters) startLocked() {
	if !w.mu.running {
		w.mu.running = true
		go w.dispatch()
	}
}

// cancel removes a call that stopped waiting.
func (w *waiters) cancel(id string, ch chan waitResult) {
	w.mu.Lock()
	defer w.mu.Unlock()
	calls := w.mu.calls[id]
	for i, c := range calls {
		if c == ch {
			calls = append(calls[:i], calls[i+1:]...)
			break
		}
	}
	if len(calls) == 0 {
		delete(w.mu.calls, id)
	} else {
		w.mu.calls[id] = calls
	}
}

// settle answers and removes every call waiting for id.
func (w *waiters) settle(id string, r waitResult) {
	w.mu.Lock()
	calls := w.mu.calls[id]
	delete(w.mu.calls, id)
	w.mu.Unlock()
	for _, c := range calls {
		c <- r
	}
}

// dispatch reads commit events until the committer stops. After a lag it
// resubscribes and settles, from the block store, whatever it may have
// missed.
func (w *waiters) dispatch() {
	for {
		sub := w.g.cfg.Ledger.Subscribe(w.g.cfg.EventBuffer)
		w.recheck()
		for ev := range sub.C {
			w.g.heights.committed(ev.Number+1, time.Now())
			w.g.inflight.remove(ev.TxIDs...)
			w.g.resubmits.committed(ev.TxIDs)
			for i, id := range ev.TxIDs {
				// Only a code that claims the tx id settles it, as in the
				// block store's index.
				if i < len(ev.Codes) && api.TxIDCounts(api.TxValidationCode(ev.Codes[i])) {
					w.settle(id, waitResult{resp: &api.CommitStatusResponse{Code: api.TxValidationCode(ev.Codes[i]), Block: ev.Number}})
				}
			}
		}
		if !sub.Lagged() {
			w.stop()
			return
		}
		w.g.metrics.lagged.Add(1)
	}
}

// recheck looks up every waiting tx id, and every id in flight, in the
// block store.
func (w *waiters) recheck() {
	for _, id := range w.g.inflight.ids() {
		if _, ok, err := w.g.lookup(id); err == nil && ok {
			w.g.inflight.remove(id)
			w.g.resubmits.committed([]string{id})
		}
	}
	w.mu.Lock()
	ids := make([]string, 0, len(w.mu.calls))
	for id := range w.mu.calls {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	for _, id := range ids {
		if resp, ok, err := w.g.lookup(id); err != nil || ok {
			w.settle(id, waitResult{resp: resp, err: err})
		}
	}
}

// stop ends the dispatcher when the committer is gone: every waiting call
// learns it, and the next registration starts a new dispatcher.
func (w *waiters) stop() {
	w.mu.Lock()
	calls := w.mu.calls
	w.mu.calls, w.mu.running = nil, false
	w.mu.Unlock()
	w.g.resubmits.stop()
	for _, cs := range calls {
		for _, c := range cs {
			c <- waitResult{err: errCommitterStopped}
		}
	}
}
