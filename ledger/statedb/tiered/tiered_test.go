package tiered

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/conformance"
)

var (
	factory = conformance.Factory{
		Name:       "tiered",
		Open:       func(dir string) (statedb.DB, error) { return Open(dir, Options{}) },
		Persistent: true,
	}
	// small has a memory tier and cache so small that reads fall through
	// to storage and Apply waits for room.
	small = conformance.Factory{
		Name: "tiered-small",
		Open: func(dir string) (statedb.DB, error) {
			return Open(dir, Options{MemoryBytes: minMemoryBytes, CacheBytes: minCacheBytes, FlushBlocks: 2})
		},
		Persistent: true,
	}
)

func TestConformance(t *testing.T) { conformance.Run(t, factory) }

// TestConformanceNoCache runs the tiers a memory node serves: no local
// cache.
func TestConformanceNoCache(t *testing.T) {
	conformance.Run(t, conformance.Factory{
		Name: "tiered-nocache",
		Open: func(dir string) (statedb.DB, error) {
			return Open(dir, Options{NoCache: true, MemoryBytes: minMemoryBytes, FlushBlocks: 2})
		},
		Persistent: true,
	})
}

func TestConformanceSmallTiers(t *testing.T) { conformance.Run(t, small) }

func BenchmarkTiered(b *testing.B) { conformance.RunBenchmarks(b, factory) }

func BenchmarkTieredSmall(b *testing.B) { conformance.RunBenchmarks(b, small) }

func TestOptionsValidate(t *testing.T) {
	bad := Options{CacheBytes: 10, MemoryBytes: -1, FlushBlocks: 2e6, FlushInterval: time.Microsecond}
	bad.Storage.Compression = "lzma"
	err := bad.Validate()
	if !errors.Is(err, ErrBadOptions) {
		t.Fatalf("Validate = %v, want ErrBadOptions", err)
	}
	for _, want := range []string{"CacheBytes = 10", "MemoryBytes = -1", "FlushBlocks = 2000000", "FlushInterval = 1µs", `Storage: pebbledb: invalid options: Compression = "lzma"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not name %q", err, want)
		}
	}
	var zero Options
	if err := zero.Validate(); err != nil {
		t.Fatalf("zero Options: %v", err)
	}
	zero.EnsureDefaults()
	if zero.MemoryBytes != DefaultMemoryBytes || zero.CacheBytes != DefaultCacheBytes || zero.Storage.MemTableSize == 0 {
		t.Fatalf("EnsureDefaults left %+v", zero)
	}
	if _, err := Open(t.TempDir(), bad); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("Open with bad options: %v, want ErrBadOptions", err)
	}
}

// block is the batch of height h in the tests: key k<i> of namespace cc
// gets value "h<h>-<i>" for i < n.
func block(h uint64, n int) *statedb.Batch {
	var b statedb.Batch
	for i := range n {
		b.Put("cc", fmt.Sprintf("k%03d", i), []byte(fmt.Sprintf("h%d-%d", h, i)), statedb.Version{Block: h - 1})
	}
	return &b
}

func wantValue(t *testing.T, d *DB, key, data string) {
	t.Helper()
	v, ok, err := d.Get("cc", key)
	if err != nil || !ok || string(v.Data) != data {
		t.Fatalf("Get(%q) = %q, %v, %v; want %q", key, v.Data, ok, err, data)
	}
}

// TestMemoryTierLoss applies blocks, of which only the first two reach the
// storage tier (one synced Apply), loses the memory tier, and checks the
// recovery rule: the savepoint falls back to the storage tier's, reads
// fall through to storage and see that height's state (never a later or
// partial one), and re-applying the blocks above it restores everything.
func TestMemoryTierLoss(t *testing.T) {
	d, err := Open(t.TempDir(), Options{FlushBlocks: 1000, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	blocks := map[uint64]*statedb.Batch{}
	for h := uint64(1); h <= 5; h++ {
		blocks[h] = block(h, int(h)) // block h writes k000..k<h-1>
		if err := d.Apply(blocks[h], h, h == 2); err != nil {
			t.Fatalf("Apply(%d): %v", h, err)
		}
	}
	wantValue(t, d, "k004", "h5-4")
	if m := d.Metrics(); m.Durable != 2 || m.Height != 5 {
		t.Fatalf("before the loss: %v; want height 5, storage savepoint 2", m)
	}

	d.loseMemoryTier()
	if sp, err := d.Savepoint(); err != nil || sp != 2 {
		t.Fatalf("Savepoint after the loss = %d, %v; want the storage tier's, 2", sp, err)
	}
	before := d.Metrics().StorageReads
	wantValue(t, d, "k000", "h2-0")
	wantValue(t, d, "k001", "h2-1")
	if _, ok, err := d.Get("cc", "k002"); ok || err != nil {
		t.Fatalf("Get(k002) after the loss: found %v, %v; want missing (first written at height 3)", ok, err)
	}
	if got := d.Metrics().StorageReads - before; got != 3 {
		t.Fatalf("after the loss %d reads reached storage, want all 3", got)
	}
	var keys []string
	if err := d.Scan("cc", "", "", func(k string, v statedb.Value) bool { keys = append(keys, k); return true }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, ",") != "k000,k001" {
		t.Fatalf("Scan after the loss = %v, want the state at height 2", keys)
	}

	for h := uint64(3); h <= 5; h++ { // the committer's recovery
		if err := d.Apply(blocks[h], h, false); err != nil {
			t.Fatalf("re-applying %d: %v", h, err)
		}
	}
	for i := range 5 {
		wantValue(t, d, fmt.Sprintf("k%03d", i), fmt.Sprintf("h5-%d", i))
	}
}

// TestMemoryBound writes ten times the memory tier's bound and checks,
// after every Apply, that the tier holds no more than its bound, that
// versions were evicted (never on the commit path: Apply stalls
// instead), and that every key still reads its newest value.
func TestMemoryBound(t *testing.T) {
	const bound = 64 << 10
	d, err := Open(t.TempDir(), Options{MemoryBytes: bound, CacheBytes: 4 << 10, FlushBlocks: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	val := strings.Repeat("v", 200)
	const blocks, perBlock = 100, 32 // 100*32*(~300 B) ≈ 1 MB, 15x the bound
	for h := uint64(1); h <= blocks; h++ {
		var b statedb.Batch
		for i := range perBlock {
			b.Put("cc", fmt.Sprintf("k%05d", int(h)*perBlock+i), []byte(val), statedb.Version{Block: h})
		}
		if err := d.Apply(&b, h, false); err != nil {
			t.Fatalf("Apply(%d): %v", h, err)
		}
		if m := d.Metrics(); m.MemoryBytes > bound {
			t.Fatalf("after Apply(%d): memory tier holds %d bytes, bound %d\n%v", h, m.MemoryBytes, bound, m)
		}
	}
	m := d.Metrics()
	if m.Evicted == 0 || m.Flushes == 0 {
		t.Fatalf("nothing evicted or flushed:\n%v", m)
	}
	for h := 1; h <= blocks; h += 7 {
		wantValue(t, d, fmt.Sprintf("k%05d", h*perBlock), val)
	}
	t.Logf("\n%v", d.Metrics())
}

// TestScanAcrossTiers scans a namespace of 500 keys whose versions lie in
// both tiers (several memory cursor chunks of each), with tombstones in
// memory hiding keys in storage, and checks every key once, in order.
func TestScanAcrossTiers(t *testing.T) {
	d, err := Open(t.TempDir(), Options{FlushBlocks: 1000, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var b statedb.Batch
	for i := 0; i < 500; i += 2 { // even keys, synced: in storage
		b.Put("cc", fmt.Sprintf("k%03d", i), []byte("s"), statedb.Version{Block: 0})
	}
	if err := d.Apply(&b, 1, true); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	for i := range 500 { // odd keys new, every fourth even key deleted, others kept: in memory only
		switch {
		case i%2 == 1:
			b.Put("cc", fmt.Sprintf("k%03d", i), []byte("m"), statedb.Version{Block: 1})
		case i%4 == 0:
			b.Delete("cc", fmt.Sprintf("k%03d", i), statedb.Version{Block: 1})
		}
	}
	if err := d.Apply(&b, 2, false); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 500 {
		if i%4 != 0 {
			want = append(want, fmt.Sprintf("k%03d", i))
		}
	}
	var got []string
	err = d.Scan("cc", "", "", func(k string, v statedb.Value) bool {
		got = append(got, k)
		if wantData := map[bool]string{true: "m", false: "s"}[len(k) > 0 && (k[len(k)-1]-'0')%2 == 1]; string(v.Data) != wantData {
			t.Errorf("Scan: %s = %q, want %q", k, v.Data, wantData)
		}
		return true
	})
	if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Scan = %d keys %v (err %v), want %d keys", len(got), got, err, len(want))
	}
	if m := d.Metrics(); m.Durable != 1 || m.Height != 2 {
		t.Fatalf("want the even keys in storage (savepoint 1) and the rest in memory (height 2):\n%v", m)
	}
}
