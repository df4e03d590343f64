package gateway

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/strand-ledger/strand/api"
)

// maxResending bounds the resubmissions in flight at once.
const maxResending = 64

// resubmitter is the I/O loop around resubmit: it feeds the core the
// transactions orderers admit (Submit) and the ones that commit (the
// waiters' dispatcher), and sends again what the core says is due. The
// loop runs while the core watches a transaction, sleeps until the next
// one is due or a resubmission answers, and never holds the lock while it
// talks to an orderer.
type resubmitter struct {
	g    *Gateway
	wake chan struct{} // buffered 1: a sending answered
	mu   struct {
		sync.Mutex
		core      *resubmit
		running   bool
		resending int // resubmissions under way
		// wakeAt is when the loop's timer fires; zero while it waits
		// only for a poke. An admission due later needs no poke: under
		// a steady load none is, and the loop scans the watched
		// transactions about once per deadline, not once per admission.
		wakeAt time.Time
	}
}

func newResubmitter(g *Gateway) *resubmitter {
	s := &resubmitter{g: g, wake: make(chan struct{}, 1)}
	s.mu.core = newResubmit(g.cfg.Timeout/2, g.cfg.OrderWait)
	return s
}

// sending watches a transaction whose first sending starts now; the
// caller then reports how it went: admitted, or refused.
func (s *resubmitter) sending(id string, raw []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.core.add(id, raw, time.Now()) && !s.mu.running {
		s.mu.running = true
		go s.loop()
	}
}

// admitted says an orderer admitted the first sending of id now.
func (s *resubmitter) admitted(id string) {
	s.mu.Lock()
	due := s.mu.core.admitted(id, time.Now())
	early := !due.IsZero() && (s.mu.wakeAt.IsZero() || due.Before(s.mu.wakeAt))
	s.mu.Unlock()
	if early {
		s.poke()
	}
}

// refused says no orderer admitted the first sending of id: the client
// has its answer, nothing is watched.
func (s *resubmitter) refused(id string) {
	s.mu.Lock()
	s.mu.core.drop(id)
	s.mu.Unlock()
	s.poke()
}

// stop forgets every watched transaction: the peer's committer stopped,
// so none can be seen to commit. The loop ends; the next sending starts
// it again.
func (s *resubmitter) stop() {
	s.mu.Lock()
	for id := range s.mu.core.txs {
		s.mu.core.drop(id)
	}
	s.mu.Unlock()
	s.poke()
}

// poke wakes the loop to look at the core again.
func (s *resubmitter) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// committed stops watching transactions that committed on the peer.
func (s *resubmitter) committed(ids []string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.mu.core.committed(id, now)
	}
}

func (s *resubmitter) loop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if len(s.mu.core.txs) == 0 {
			s.mu.running = false
			s.mu.Unlock()
			return
		}
		var due []dueTx
		var next time.Time
		if s.mu.resending < maxResending { // else a send that ends wakes the loop
			due, next = s.mu.core.due(time.Now(), maxResending-s.mu.resending)
			s.mu.resending += len(due)
		}
		s.mu.wakeAt = next
		s.mu.Unlock()
		for _, tx := range due {
			go s.send(tx)
		}
		var at <-chan time.Time
		if !next.IsZero() {
			timer.Reset(time.Until(next))
			at = timer.C
		}
		select { // (Go 1.23 timers: Reset leaves no stale tick to drain)
		case <-at:
		case <-s.wake:
		}
	}
}

// send submits tx again, to the orderers in preference order, and tells
// the core how it went: admitted, refused for now (503 while a leader is
// elected, 429), or refused for good (forgotten: the client's deadline
// answers it).
func (s *resubmitter) send(tx dueTx) {
	ctx, cancel := context.WithTimeout(context.Background(), s.g.cfg.Timeout)
	r := s.g.submit(ctx, &api.SubmitRequest{Transaction: tx.raw}, tx.id)
	cancel()
	now := time.Now()
	s.mu.Lock()
	s.mu.resending--
	switch r.Status {
	case http.StatusOK:
		s.g.metrics.resubmitted.Add(1)
		s.mu.core.resent(tx.id, true, now)
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		s.mu.core.resent(tx.id, false, now)
	default:
		s.mu.core.drop(tx.id)
	}
	s.mu.Unlock()
	s.poke()
}
