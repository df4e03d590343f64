package wasm_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/contract/wasm"
)

// TestCacheDir: a module compiled by one engine is kept in its CacheDir,
// and a second engine on that directory (a restarted node) serves calls
// with it; a directory others may write is refused, naming its mode.
func TestCacheDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	first, err := wasm.NewEngine(wasm.Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	compile(t, first, misbehave(t))
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	var files int
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return err
	})
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 || files == 0 {
		t.Fatalf("cache dir after a compile: %v, %d files (%v); want mode 0700 and the compiled module", fi.Mode(), files, err)
	}
	second := engine(t, wasm.Options{CacheDir: dir})
	if got := call(t, compile(t, second, misbehave(t)), "echo", "a", "b"); got != "a|b" {
		t.Fatalf("echo from the cached module = %q, want a|b", got)
	}

	// A flipped byte in a cached module (a failing disk): the engine
	// must not run it, and must still serve the contract.
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			b[len(b)/2] ^= 0x40
			os.WriteFile(path, b, 0o600)
		}
		return err
	})
	third := engine(t, wasm.Options{CacheDir: dir})
	if got := call(t, compile(t, third, misbehave(t)), "echo", "a", "b"); got != "a|b" {
		t.Fatalf("echo after a flipped byte in the cache = %q, want a|b", got)
	}

	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err = wasm.NewEngine(wasm.Options{CacheDir: open})
	if !errors.Is(err, wasm.ErrBadOptions) || !strings.Contains(err.Error(), open) || !strings.Contains(err.Error(), "-rwxrwxrwx") {
		t.Fatalf("NewEngine with a world-writable CacheDir = %v, want ErrBadOptions naming %s and its mode", err, open)
	}
}
