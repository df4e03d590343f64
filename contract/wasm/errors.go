package wasm

import "errors"

// Sentinel errors, checked with errors.Is. Compile returns the first five;
// a call's error wraps one of the rest (a contract's own failure is a
// *contract.Error instead).
var (
	ErrBadOptions = errors.New("wasm: invalid options")
	ErrCompile    = errors.New("wasm: module does not compile")
	ErrABI        = errors.New("wasm: module does not implement the strand ABI")
	ErrImport     = errors.New("wasm: module imports what strand does not provide")
	ErrMeter      = errors.New("wasm: module cannot be metered")

	ErrTrap     = errors.New("wasm: contract trapped")
	ErrFuel     = errors.New("wasm: contract ran out of fuel")
	ErrExit     = errors.New("wasm: contract exited")
	ErrRefused  = errors.New("wasm: contract called a refused import")
	ErrMemory   = errors.New("wasm: contract hit the memory cap")
	ErrDeadline = errors.New("wasm: contract passed its call deadline")
	ErrBadCall  = errors.New("wasm: contract broke the host ABI")
	ErrClosed   = errors.New("wasm: engine closed")
)
