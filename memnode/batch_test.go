package memnode

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/strand-ledger/strand/api"
)

// blockingCalls is a call that answers each key with its own name as the
// value (height 7), but only once the test releases that call; it
// records the keys of every call.
type blockingCalls struct {
	mu      sync.Mutex
	calls   [][]string
	release []chan error // one per call, by number (1, 2, ...)
	started chan int     // the number of each call that began
}

func newBlockingCalls() *blockingCalls {
	f := &blockingCalls{started: make(chan int, 100)}
	for range 10 {
		f.release = append(f.release, make(chan error, 1))
	}
	return f
}

func (f *blockingCalls) do(keys []*api.MemKey, _ bool) (uint64, []*api.MemValue, error) {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = string(k.GetKey())
	}
	f.mu.Lock()
	f.calls = append(f.calls, names)
	n := len(f.calls)
	f.mu.Unlock()
	f.started <- n
	if err := <-f.release[n]; err != nil {
		return 0, nil, err
	}
	vals := make([]*api.MemValue, len(keys))
	for i, k := range keys {
		vals[i] = &api.MemValue{Found: true, Data: k.GetKey()}
	}
	return 7, vals, nil
}

func (f *blockingCalls) keys(n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[n-1]
}

func memKeys(names ...string) []*api.MemKey {
	out := make([]*api.MemKey, len(names))
	for i, n := range names {
		out[i] = &api.MemKey{Namespace: []byte("ns"), Key: []byte(n)}
	}
	return out
}

// waitQueued waits until n reads wait in the values queue.
func (b *readBatcher) waitQueued(n int) {
	for {
		b.mu.Lock()
		q := len(b.kinds[0].queue)
		b.mu.Unlock()
		if q >= n {
			return
		}
		runtime.Gosched()
	}
}

type answer struct {
	name   string
	height uint64
	vals   []string
	err    error
}

// TestBatcherJoinsWaitingReads: with maxReadCalls calls in flight, the
// reads that come meanwhile wait, and go together in one call when a
// slot frees; every read gets the values of its own keys, and an error
// reaches every read of the failed call.
func TestBatcherJoinsWaitingReads(t *testing.T) {
	var b readBatcher
	f := newBlockingCalls()
	answers := make(chan answer, 10)
	read := func(name string, keys ...string) {
		h, vals, err := b.get(memKeys(keys...), false, f.do)
		a := answer{name: name, height: h, err: err}
		for _, v := range vals {
			a.vals = append(a.vals, string(v.GetData()))
		}
		answers <- a
	}
	expect := func(want map[string][]string, wantErr error) {
		t.Helper()
		for range want {
			a := <-answers
			if !errors.Is(a.err, wantErr) || fmt.Sprint(a.vals) != fmt.Sprint(want[a.name]) {
				t.Fatalf("read %s: values %v, err %v; want %v, err %v", a.name, a.vals, a.err, want[a.name], wantErr)
			}
			if wantErr == nil && a.height != 7 {
				t.Fatalf("read %s: height %d, want 7", a.name, a.height)
			}
		}
	}
	// Fill the call slots: calls 1 and 2.
	for i := range maxReadCalls {
		go read(fmt.Sprint("slot", i+1), fmt.Sprint("s", i+1))
		if n := <-f.started; n != i+1 {
			t.Fatalf("call %d started, want %d", n, i+1)
		}
	}
	// Three reads queue behind them; none starts a call.
	go read("a", "a1", "a2")
	go read("b", "b1")
	go read("c", "c1", "c2", "c3")
	b.waitQueued(3)
	f.release[1] <- nil // call 1 answers; its slot sends the queue
	expect(map[string][]string{"slot1": {"s1"}}, nil)
	if n := <-f.started; n != 3 || len(f.keys(3)) != 6 {
		t.Fatalf("call %d carried keys %v, want call 3 with the 6 keys of a, b and c", n, f.keys(n))
	}
	f.release[3] <- nil
	expect(map[string][]string{"a": {"a1", "a2"}, "b": {"b1"}, "c": {"c1", "c2", "c3"}}, nil)

	// Call 2 is still in flight and call 3's slot is free: a read goes
	// at once. Then both slots are busy, and two reads queue.
	go read("d", "d1")
	if n := <-f.started; n != 4 {
		t.Fatalf("call %d started, want 4", n)
	}
	go read("e", "e1")
	go read("f", "f1")
	b.waitQueued(2)
	f.release[2] <- nil
	expect(map[string][]string{"slot2": {"s2"}}, nil)
	if n := <-f.started; n != 5 || fmt.Sprint(f.keys(5)) != "[e1 f1]" && fmt.Sprint(f.keys(5)) != "[f1 e1]" {
		t.Fatalf("call %d carried keys %v, want call 5 with e1 and f1", n, f.keys(n))
	}
	boom := errors.New("boom")
	f.release[5] <- boom
	expect(map[string][]string{"e": nil, "f": nil}, boom)
	f.release[4] <- nil
	expect(map[string][]string{"d": {"d1"}}, nil)

	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.kinds[0]; q.inflight != 0 || len(q.queue) != 0 {
		t.Fatalf("after every read answered: %d calls in flight, %d queued", q.inflight, len(q.queue))
	}
}

// TestBatcherBoundsJoinedCalls: queued reads join a call only while
// their keys fit maxBatchKeys; the rest go in the next call.
func TestBatcherBoundsJoinedCalls(t *testing.T) {
	q := batchQueue{}
	big := &pendingRead{keys: make([]*api.MemKey, maxBatchKeys-1)}
	two := &pendingRead{keys: make([]*api.MemKey, 2)}
	one := &pendingRead{keys: make([]*api.MemKey, 1)}
	huge := &pendingRead{keys: make([]*api.MemKey, maxBatchKeys+5)}
	q.queue = []*pendingRead{big, two, one, huge}
	for i, want := range [][]*pendingRead{{big}, {two, one}, {huge}, nil} {
		got := q.take()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("take %d: %d reads, want %d", i, len(got), len(want))
		}
	}
}
