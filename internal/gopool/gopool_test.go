package gopool

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPoolRunsEverythingAndReusesWorkers(t *testing.T) {
	var p Pool
	var ran atomic.Int64
	var wg sync.WaitGroup
	for range 1000 {
		wg.Add(1)
		p.Go(func() { ran.Add(1); wg.Done() })
	}
	wg.Wait()
	if ran.Load() != 1000 {
		t.Fatalf("%d functions ran, want 1000", ran.Load())
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.Idle() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no worker went idle")
		}
		time.Sleep(time.Millisecond)
	}
	if p.Idle() > DefaultMaxIdle {
		t.Fatalf("%d idle workers, want at most %d", p.Idle(), DefaultMaxIdle)
	}
	// A function given while a worker is idle runs on it: no new worker.
	// Wait until the workers of the first burst have all gone idle.
	before := p.Idle()
	for {
		time.Sleep(50 * time.Millisecond)
		if now := p.Idle(); now == before {
			break
		} else {
			before = now
		}
	}
	done := make(chan struct{})
	p.Go(func() { close(done) })
	<-done
	for p.Idle() != before {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle workers after reuse, want %d", p.Idle(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBlockedFunctionsDoNotHoldUpOthers(t *testing.T) {
	var p Pool
	release := make(chan struct{})
	for range 10 {
		p.Go(func() { <-release })
	}
	done := make(chan struct{})
	p.Go(func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a function waited behind blocked ones")
	}
	close(release)
}
