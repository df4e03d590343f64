package wasm

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tetratelabs/wazero"
)

// openCache opens (creating it, mode 0700) the compilation cache in dir.
// The cache holds machine code the engine runs, so a directory others
// may write is refused: whoever writes it would run code in the node.
func openCache(dir string) (wazero.CompilationCache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: CacheDir %s: %v", ErrBadOptions, dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: CacheDir %s: %v", ErrBadOptions, dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: CacheDir %s is not a directory", ErrBadOptions, dir)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return nil, fmt.Errorf("%w: CacheDir %s has mode %v: group or others may write the machine code it holds; want the node's alone (chmod 700)", ErrBadOptions, dir, perm)
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: CacheDir %s: %v", ErrBadOptions, dir, err)
	}
	return cache, nil
}

// clearCache removes the files under dir, keeping its directories
// (wazero made them when the engine opened the cache): the next compile
// writes a fresh entry.
func clearCache(dir string) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Remove(path)
	})
}
