package pebbledb_test

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
)

// TestLoadMillionKeys loads 1,000,000 keys of 100 bytes in batches of
// 10,000 and checks a sample and the count. It runs only with STRAND_LONG=1
// and without -short.
func TestLoadMillionKeys(t *testing.T) {
	if testing.Short() || os.Getenv("STRAND_LONG") != "1" {
		t.Skip("set STRAND_LONG=1 (and drop -short) to load 1M keys")
	}
	const keys, per = 1_000_000, 10_000
	db, err := pebbledb.Open(t.TempDir(), pebbledb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	value := make([]byte, 100)
	key := func(i int) string { return fmt.Sprintf("asset-%09d", i*7919%keys) }
	var b statedb.Batch
	begin := time.Now()
	for h := 1; h <= keys/per; h++ {
		b.Reset()
		for j := range per {
			i := (h-1)*per + j
			b.Put("assets", key(i), value, statedb.Version{Block: uint64(h), Tx: uint32(j)})
		}
		if err := db.Apply(&b, uint64(h), h%10 == 0); err != nil {
			t.Fatalf("Apply batch %d: %v", h, err)
		}
	}
	load := time.Since(begin)
	for _, i := range []int{0, 1, keys / 2, keys - 1} {
		if _, ok, err := db.Get("assets", key(i)); err != nil || !ok {
			t.Fatalf("Get(%q) after load: found %v, err %v", key(i), ok, err)
		}
	}
	n := 0
	if err := db.Scan("assets", "", "", func(string, statedb.Value) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	if n != keys {
		t.Fatalf("Scan counted %d keys, want %d", n, keys)
	}
	t.Logf("loaded %d keys in %v (%.0f keys/s); scanned in %v; VmRSS %s",
		keys, load, float64(keys)/load.Seconds(), time.Since(begin)-load, rss())
}

// rss returns the process's resident set size from /proc, or "unknown".
func rss() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
