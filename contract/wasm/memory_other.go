//go:build !linux

package wasm

import "github.com/tetratelabs/wazero/experimental"

// Elsewhere than Linux an instance resets by copying its snapshot.

type linearMemory struct{ mapped int }

type snapshotFile struct{}

func (in *instance) allocator() experimental.MemoryAllocator { return nil }

func newSnapshotFile([]byte) (*snapshotFile, error) { return nil, nil }

func (f *snapshotFile) close() {}

func (in *instance) mapSnapshot(*snapshotFile) bool { return false }

func (in *instance) dropWrites() bool { return false }
