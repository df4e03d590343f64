package bench

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb/backend"
)

// Every rounds file kept in rounds/ (the ones published figures come
// from) loads and validates, so it cannot rot as rounds change.
func TestRoundFilesLoad(t *testing.T) {
	files, err := filepath.Glob("rounds/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("rounds files: %v, %v", files, err)
	}
	for _, f := range files {
		rs, err := LoadRounds(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.StateDB == "rocksdb" && !slices.Contains(backend.Names(), "rocksdb") {
				continue // a binary built without -tags rocksdb refuses it, rightly
			}
			r.EnsureDefaults()
			r.embeddedDefaults()
			if err := r.Validate(true); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
}
