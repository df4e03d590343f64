package wasm

import (
	"fmt"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// With Options.CopyOnWrite, on Linux, an instance's reset costs what its
// call wrote, not the size of its memory. A module's post-_initialize memory lives in a memfd; every
// instance maps it copy-on-write over the start of its linear memory, so
// a call's writes land in private pages, and reset drops them with one
// madvise(MADV_DONTNEED): the next read of those pages sees the snapshot
// again. Instances share the snapshot's pages in the page cache. Each
// written page costs a page fault on the next call, so it is not the
// default (see Options.CopyOnWrite for the numbers).

// linearMemory is a wasm linear memory in a region reserved at its
// maximum size, so it never moves when it grows.
type linearMemory struct {
	region []byte
	mapped int // bytes of region mapped from the snapshot file
}

func (l *linearMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(l.region)) {
		return nil
	}
	return l.region[:size]
}

func (l *linearMemory) Free() {
	if l.region != nil {
		unix.Munmap(l.region)
		l.region = nil
	}
}

// allocator makes an instance's memory and records it in in.lm.
func (in *instance) allocator() experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
		region, err := unix.Mmap(-1, 0, int(max), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
		if err != nil {
			return nil // wazero fails the instantiation
		}
		in.lm = &linearMemory{region: region}
		return in.lm
	})
}

// snapshotFile is a module's memory snapshot in a sealed memfd.
type snapshotFile struct {
	fd   int
	size int
}

func newSnapshotFile(snap []byte) (*snapshotFile, error) {
	fd, err := unix.MemfdCreate("strand-wasm-snapshot", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("wasm: memfd_create: %w", err)
	}
	for b := snap; len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("wasm: writing the memory snapshot: %w", err)
		}
		b = b[n:]
	}
	// Sealed: no instance, nor anything else, can change what a reset restores.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("wasm: sealing the memory snapshot: %w", err)
	}
	return &snapshotFile{fd: fd, size: len(snap)}, nil
}

func (f *snapshotFile) close() {
	if f != nil {
		unix.Close(f.fd)
	}
}

// mapSnapshot maps f over the start of the instance's memory, whose
// content equals it. It reports false if it cannot, and the instance
// resets by copying.
func (in *instance) mapSnapshot(f *snapshotFile) bool {
	if f == nil || in.lm == nil || f.size > len(in.lm.region) || f.size%unix.Getpagesize() != 0 {
		return false
	}
	_, err := unix.MmapPtr(f.fd, 0, unsafe.Pointer(unsafe.SliceData(in.lm.region)), uintptr(f.size),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	if err != nil {
		return false
	}
	in.lm.mapped = f.size
	return true
}

// dropWrites resets a mapped instance's memory to the snapshot.
func (in *instance) dropWrites() bool {
	return unix.Madvise(in.lm.region[:in.lm.mapped], unix.MADV_DONTNEED) == nil
}
