package grpctune

import (
	"testing"

	"google.golang.org/grpc/mem"
)

// TestBufferPool: loading the package makes BufferPool gRPC's default
// pool (the proto codec's), and a message between gRPC's own tiers gets a
// buffer at most twice its size, not a whole MiB to clear.
func TestBufferPool(t *testing.T) {
	if mem.DefaultBufferPool() != BufferPool {
		t.Fatal("gRPC's default buffer pool is not grpctune.BufferPool")
	}
	for _, n := range []int{300, 5 << 10, 40 << 10, 600 << 10, 3 << 20, 16 << 20} {
		b := BufferPool.Get(n)
		if len(*b) != n || cap(*b) > 2*n {
			t.Errorf("Get(%d): len %d cap %d, want len %d and cap at most %d", n, len(*b), cap(*b), n, 2*n)
		}
		BufferPool.Put(b)
	}
}
