// Package wasm runs WebAssembly contracts on wazero (pure Go, no cgo). An
// Engine compiles a module once per code hash (Compile) into a Module, a
// contract.Contract whose calls run on pooled instances; the endorser runs
// it like any built-in contract. docs/contracts.md is the reference: the
// host ABI (version 1, import module "strand"), the SDKs, limits and
// errors.
//
// Invariants:
//   - Deterministic by construction: a module imports only the host ABI
//     and WASI preview 1, checked at Compile (ErrImport); the WASI
//     functions are stubs whose clocks, randomness and output derive from
//     the transaction (wasi.go), and the rest of WASI ends the call
//     (ErrRefused).
//   - Every call starts from the instance state _initialize left: its
//     memory is reset after each call (memory_linux.go: dropped
//     copy-on-write pages; elsewhere a copy), so no call sees another's
//     memory. An instance that cannot be reset exactly (its call failed,
//     grew the memory, or was abandoned) is closed, never pooled.
//   - Every call is bounded: Options.Timeout (wazero closes the instance
//     when the call's context is done) and Options.MemoryPages (linear
//     memory cap). There is no fuel metering: in XOV a call that times
//     out on one endorser only fails that endorsement.
//   - A failure is a named error wrapping one sentinel, counted in
//     Metrics, and never affects the next call.
//
// The caller's duty: Close the Engine when its modules are no longer
// called.
package wasm
