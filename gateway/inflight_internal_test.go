package gateway

import (
	"fmt"
	"testing"
	"time"
)

func TestInflightBoundRateAndExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	f := newInflight(100, func() time.Time { return now })
	for i := range 100 {
		if ok, _ := f.add(fmt.Sprint(i)); !ok {
			t.Fatalf("add %d refused below the bound", i)
		}
	}
	ok, wait := f.add("x")
	if ok || wait != 250*time.Millisecond {
		t.Fatalf("add at the bound: %v, retry %v; want refused, 250 ms (no rate yet)", ok, wait)
	}
	// 40 commits in one second: 40/s. At 100 in flight the excess over half
	// the bound is 50: 1.25 s.
	for i := range 39 {
		f.remove(fmt.Sprint(i))
	}
	now = now.Add(time.Second)
	f.remove("39")
	for i := range 40 {
		f.add(fmt.Sprint("again", i))
	}
	if ok, wait := f.add("y"); ok || wait != 1250*time.Millisecond {
		t.Fatalf("add at the bound: %v, retry %v; want refused, 1.25 s", ok, wait)
	}
	f.remove("no such id") // not counted
	// Transactions the ordering service lost stop counting after maxAge.
	now = now.Add(maxAge + time.Second)
	if ok, _ := f.add("z"); !ok {
		t.Fatal("entries older than maxAge still count")
	}
	if n := f.count(); n != 1 {
		t.Fatalf("%d in flight after expiry, want 1", n)
	}
}
