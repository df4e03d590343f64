package bench

import (
	"time"

	"github.com/strand-ledger/strand/bench/rate"
)

// The wasm preset (docs/contracts.md): Smallbank built in against
// Smallbank as a WebAssembly module on the same embedded network: the C
// build (examples/smallbank-c, the bench's default wasm Smallbank) and
// the Go SDK's (examples/smallbank, rounds labelled wasm-go), both built
// at bench time, at saturation (64 clients) and at low load (one client),
// each triple twice, alternated, so that drift in a shared machine's
// speed falls on all. The targets: the module's throughput at least 85%
// of the built-in's, its low-load p50 within 0.5 ms.
func init() {
	Presets["wasm"] = Preset{"wasm", "Smallbank built in against Smallbank as a WebAssembly module (C, and Go SDK): throughput at saturation and latency of one client, alternated",
		wasmRounds}
}

func wasmRounds(full bool) []Round {
	var rs []Round
	for _, pass := range []string{"", "-2"} {
		for _, v := range []struct{ name, rt, src string }{
			{RuntimeBuiltin, RuntimeBuiltin, ""}, {RuntimeWasm, RuntimeWasm, ""}, {"wasm-go", RuntimeWasm, WasmSourceGo},
		} {
			rs = append(rs,
				Round{Label: "saturation-" + v.name + pass, Workload: "smallbank", Clients: 64, ContractRuntime: v.rt, WasmSource: v.src,
					Duration: pick(full, 3*time.Second, 15*time.Second)},
				Round{Label: "lowload-" + v.name + pass, Workload: "smallbank", Clients: 1, ContractRuntime: v.rt, WasmSource: v.src,
					Rate: rate.Config{Kind: "fixed-load", Load: 1}, Duration: pick(full, 3*time.Second, 15*time.Second)})
		}
	}
	return rs
}

// The external preset (docs/contracts.md): Smallbank built in against
// Smallbank on an external contract server (the Go SDK in the bench's
// process, over gRPC with mutual TLS), pairs alternated as in the wasm
// preset. The target: at least 70% of the built-in's throughput.
func init() {
	Presets["external"] = Preset{"external", "Smallbank built in against Smallbank on an external gRPC contract server (Go SDK): throughput at saturation and latency of one client, pairs alternated",
		externalRounds}
}

func externalRounds(full bool) []Round {
	var rs []Round
	for _, pass := range []string{"", "-2"} {
		for _, rt := range []string{RuntimeBuiltin, RuntimeExternal} {
			rs = append(rs,
				Round{Label: "saturation-" + rt + pass, Workload: "smallbank", Clients: 64, ContractRuntime: rt,
					Duration: pick(full, 3*time.Second, 15*time.Second)},
				Round{Label: "lowload-" + rt + pass, Workload: "smallbank", Clients: 1, ContractRuntime: rt,
					Rate: rate.Config{Kind: "fixed-load", Load: 1}, Duration: pick(full, 3*time.Second, 15*time.Second)})
		}
	}
	return rs
}
