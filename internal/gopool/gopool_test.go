package gopool

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"
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

// embedder stands for a server that embeds its Pool.
type embedder struct {
	pool  Pool
	state [1 << 16]byte
}

// TestIdleWorkersRetainNothing checks that idle workers keep neither the
// value their Pool is embedded in nor what their last function captured:
// a closed server's pool must not hold the server's memory until its
// workers time out (DefaultIdleFor).
func TestIdleWorkersRetainNothing(t *testing.T) {
	srv := &embedder{}
	wSrv := weak.Make(srv)
	wCaptured := runCapturing(&srv.pool)
	deadline := time.Now().Add(5 * time.Second)
	for srv.pool.Idle() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("no idle worker after 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	srv = nil
	runtime.GC()
	runtime.GC()
	if wSrv.Value() != nil {
		t.Error("an idle worker keeps the value its Pool is embedded in reachable")
	}
	if wCaptured.Value() != nil {
		t.Error("an idle worker keeps what its last function captured reachable")
	}
}

// runCapturing runs on p a function that captures a fresh array, waits
// for it, and returns a weak pointer to the array.
func runCapturing(p *Pool) weak.Pointer[[1 << 16]byte] {
	captured := new([1 << 16]byte)
	var wg sync.WaitGroup
	wg.Add(1)
	p.Go(func() { captured[0]++; wg.Done() })
	wg.Wait()
	return weak.Make(captured)
}
