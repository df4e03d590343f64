package wasm

import (
	"fmt"
	"time"
)

// Options configures an Engine. The zero value is usable: EnsureDefaults
// fills it in.
type Options struct {
	// MemoryPages caps every instance's linear memory, in 64 KiB pages:
	// a module asking for more at start does not compile, and a call that
	// grows past it fails with ErrMemory. Default 1024 (64 MiB), 1 to 65536.
	MemoryPages uint32
	// Timeout bounds one call; past it the instance is closed and the call
	// fails with ErrDeadline. Default 2s, shorter than the endorser's 5 s,
	// so that the runtime, not the endorser, ends a runaway call.
	Timeout time.Duration
	// Fuel is the budget of one call in fuel units: one unit per
	// WebAssembly instruction the call may run (meter in fuel.go charges
	// a function body or loop body when it is entered, for all of its
	// instructions outside nested loops). A call that uses it up fails
	// with ErrFuel, the same on every peer: unlike Timeout, it does not
	// depend on the machine or its load. Default 500,000,000, 1 to 2^62:
	// a Go Smallbank's largest call (create_accounts of 1000 accounts)
	// uses 372 million, and a tight loop uses it up in about 1.5 s on
	// this project's machine, within Timeout (docs/contracts.md). A
	// definition may set its own (Module.WithFuel).
	Fuel int64
	// Pool is how many instances a module has at most, made as calls need
	// them and kept between calls. A call finding them all busy waits for
	// one (its Timeout bounds the wait and the call together): calls are
	// CPU-bound, so more instances than cores buy nothing, and making one
	// costs milliseconds for a Go module. Default 8, 1 to 1024.
	Pool int
	// CopyOnWrite resets an instance after a call by dropping the pages
	// the call wrote (Linux: the snapshot is mapped copy-on-write; see
	// memory_linux.go) instead of copying the whole snapshot back. It
	// wins where page faults are cheap; in a sandbox that makes them dear
	// it loses (this project's machine: 377 µs a Go Smallbank call against
	// 212 µs copying 4 MiB). Default false.
	CopyOnWrite bool
	// Interpreter runs modules on wazero's interpreter instead of
	// compiling them to machine code: Compile takes a fraction of the
	// time (a Go module of 4.6 MB: see docs/contracts.md), calls run many
	// times slower. It checks a module exactly as the compiler would (the
	// same decoder, validation, imports, exports and _initialize under
	// the same fuel), so it suits a client that only checks a module
	// (strand contract package, deploy), never a peer. Default false.
	Interpreter bool
	// OutputBytes is how much of a call's stdout and stderr (WASI fd 1 and
	// 2) is kept for its error message. Default 2048, 0 to 65536.
	OutputBytes int
	// CacheDir keeps the machine code of compiled modules on disk
	// (wazero's compilation cache, keyed by the metered module and
	// wazero's version), so that a process compiling a module some
	// process compiled before with the same options loads it instead: a
	// restarted peer does not compile its contracts again. "": memory
	// only. The engine runs what it finds there, so the directory must be
	// the node's own: NewEngine creates it with mode 0700 and refuses one
	// that group or others may write. Not used with Interpreter.
	CacheDir string
}

// Defaults.
const (
	DefaultMemoryPages = 1024
	DefaultTimeout     = 2 * time.Second
	DefaultFuel        = 500_000_000
	MaxFuel            = 1 << 62
	DefaultPool        = 8
	DefaultOutputBytes = 2048
)

// EnsureDefaults fills in zero fields.
func (o *Options) EnsureDefaults() {
	if o.MemoryPages == 0 {
		o.MemoryPages = DefaultMemoryPages
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Fuel == 0 {
		o.Fuel = DefaultFuel
	}
	if o.Pool == 0 {
		o.Pool = DefaultPool
	}
	if o.OutputBytes == 0 {
		o.OutputBytes = DefaultOutputBytes
	}
}

// Validate reports the first invalid field.
func (o *Options) Validate() error {
	switch {
	case o.MemoryPages < 1 || o.MemoryPages > 65536:
		return fmt.Errorf("%w: MemoryPages is %d, want 1 to 65536 (64 KiB pages)", ErrBadOptions, o.MemoryPages)
	case o.Timeout <= 0:
		return fmt.Errorf("%w: Timeout is %v, want more than 0", ErrBadOptions, o.Timeout)
	case o.Fuel < 1 || o.Fuel > MaxFuel:
		return fmt.Errorf("%w: Fuel is %d, want 1 to 2^62 (units per call)", ErrBadOptions, o.Fuel)
	case o.Pool < 1 || o.Pool > 1024:
		return fmt.Errorf("%w: Pool is %d, want 1 to 1024", ErrBadOptions, o.Pool)
	case o.OutputBytes < 0 || o.OutputBytes > 65536:
		return fmt.Errorf("%w: OutputBytes is %d, want 0 to 65536", ErrBadOptions, o.OutputBytes)
	}
	return nil
}
