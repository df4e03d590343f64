package statedb_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
)

func TestClaimDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	a := statedb.Format{Backend: "a", Version: 1}
	if err := statedb.ClaimDir(dir, a, nil); err != nil {
		t.Fatalf("ClaimDir on a new directory: %v", err)
	}
	if err := statedb.ClaimDir(dir, a, nil); err != nil {
		t.Fatalf("ClaimDir again with the same format: %v", err)
	}
	for _, other := range []statedb.Format{{Backend: "b", Version: 1}, {Backend: "a", Version: 2}} {
		err := statedb.ClaimDir(dir, other, nil)
		if !errors.Is(err, statedb.ErrFormat) || !strings.Contains(err.Error(), a.String()) || !strings.Contains(err.Error(), other.String()) {
			t.Errorf("ClaimDir(%v) on a directory of %v: err = %v, want ErrFormat naming both", other, a, err)
		}
	}
}

func TestClaimDirMarkerless(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "DATA"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := statedb.Format{Backend: "a", Version: 1}
	if err := statedb.ClaimDir(dir, f, nil); !errors.Is(err, statedb.ErrFormat) {
		t.Fatalf("ClaimDir on files without a marker: err = %v, want ErrFormat", err)
	}
	adopt := func(names []string) bool { return len(names) == 1 && names[0] == "DATA" }
	if err := statedb.ClaimDir(dir, f, adopt); err != nil {
		t.Fatalf("ClaimDir adopting: %v", err)
	}
	if err := statedb.ClaimDir(dir, f, nil); err != nil {
		t.Fatalf("ClaimDir after adoption wrote the marker: %v", err)
	}
}

func TestClaimDirBadMarker(t *testing.T) {
	for _, content := range []string{"", "junk", "strand statedb\nbackend a\nformat x\n", "strand statedb\nbackend \nformat 1\n"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, statedb.FormatFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := statedb.ClaimDir(dir, statedb.Format{Backend: "a", Version: 1}, nil); !errors.Is(err, statedb.ErrFormat) {
			t.Errorf("ClaimDir with marker %q: err = %v, want ErrFormat", content, err)
		}
	}
}
