package backend_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
	"github.com/strand-ledger/strand/ledger/statedb/redisdb/redistest"
)

func TestUnknownBackend(t *testing.T) {
	_, err := backend.Open("couchdb", t.TempDir(), backend.Options{})
	if !errors.Is(err, backend.ErrUnknown) {
		t.Fatalf("Open(couchdb): err = %v, want ErrUnknown", err)
	}
	for _, n := range backend.Names() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not list backend %q", err, n)
		}
	}
}

// TestWrongBackend opens a directory written by each on-disk backend with
// every other one, and checks the refusal names both.
func TestWrongBackend(t *testing.T) {
	var o backend.Options
	if redistest.Installed() {
		o.Redis.Address = redistest.Start(t).Socket
	}
	var disk []string
	for _, n := range backend.Names() {
		if backend.Persistent(n) && n != backend.Memnode && (n != backend.Redis || o.Redis.Address != "") { // memnode's state is on the memory node's disk
			disk = append(disk, n)
		}
	}
	for _, writer := range disk {
		dir := t.TempDir()
		db, err := backend.Open(writer, dir, o)
		if err != nil {
			t.Fatalf("Open(%s): %v", writer, err)
		}
		var b statedb.Batch
		b.Put("cc", "k", []byte("v"), statedb.Version{Block: 1})
		if err := db.Apply(&b, 1, false); err != nil {
			t.Fatalf("%s: Apply: %v", writer, err)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("%s: Close: %v", writer, err)
		}
		for _, reader := range disk {
			if reader == writer {
				continue
			}
			db, err := backend.Open(reader, dir, o)
			if err == nil {
				_ = db.Close()
				t.Errorf("Open(%s) of a %s directory succeeded", reader, writer)
				continue
			}
			if !errors.Is(err, statedb.ErrFormat) || !strings.Contains(err.Error(), `"`+writer+`"`) || !strings.Contains(err.Error(), `"`+reader+`"`) {
				t.Errorf("Open(%s) of a %s directory: err = %v, want ErrFormat naming both", reader, writer, err)
			}
		}
		db, err = backend.Open(writer, dir, o)
		if err != nil {
			t.Fatalf("reopening %s after the refusals: %v", writer, err)
		}
		if v, ok, err := db.Get("cc", "k"); err != nil || !ok || string(v.Data) != "v" {
			t.Errorf("%s after the refusals: Get = %q, %v, %v", writer, v.Data, ok, err)
		}
		_ = db.Close()
	}
}
