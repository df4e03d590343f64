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
//   - Every call is bounded: by fuel, the same on every peer (Compile
//     runs meter, fuel.go, on the code: a charge at each function entry
//     and loop header on an added global, FuelExport; the budget is
//     Options.Fuel or a definition's, WithFuel; ErrFuel), by
//     Options.Timeout (wazero closes the instance when the call's context
//     is done; the backstop) and by Options.MemoryPages (linear memory
//     cap). So is every instance's _initialize (and a start function):
//     by Options.Fuel, whatever a definition's budget, and the Timeout.
//   - Metering changes nothing else: the metered module is the original
//     byte for byte plus the charges, the global and its export, and no
//     original instruction or export can name that global (meter refuses
//     the module: it would be invalid anyway), so a contract cannot
//     refill its fuel.
//   - A failure is a named error wrapping one sentinel, counted in
//     Metrics, and never affects the next call.
//
// The caller's duty: Close the Engine when its modules are no longer
// called.
package wasm
