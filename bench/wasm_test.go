package bench

import (
	"os"
	"strings"
	"testing"
)

// TestContractRuntimeValidate: contract_runtime and wasm_module are checked
// like every other round field.
func TestContractRuntimeValidate(t *testing.T) {
	for _, tc := range []struct {
		r      Round
		net    bool // embedded
		errHas string
	}{
		{Round{Workload: "smallbank", ContractRuntime: "wasm"}, true, ""},
		{Round{Workload: "smallbank", ContractRuntime: "builtin"}, true, ""},
		{Round{Workload: "smallbank", ContractRuntime: "jvm"}, true, `contract_runtime = "jvm": want builtin (the default), wasm or external`},
		{Round{Workload: "ycsb", ContractRuntime: "wasm"}, true, "only smallbank has a WebAssembly build"},
		{Round{Workload: "smallbank", ContractRuntime: "external"}, true, ""},
		{Round{Workload: "ycsb", ContractRuntime: "external"}, true, "only smallbank has an external server"},
		{Round{Workload: "smallbank", WasmModule: "x.wasm"}, true, "wasm_module = \"x.wasm\": want unset unless contract_runtime is wasm"},
		{Round{Workload: "smallbank", ContractRuntime: "wasm"}, false, "only apply to an embedded network"},
		{Round{Workload: "smallbank", ContractRuntime: "wasm", WasmSource: "go"}, true, ""},
		{Round{Workload: "smallbank", ContractRuntime: "wasm", WasmSource: "rust"}, true, `wasm_source = "rust": want c (the default) or go`},
		{Round{Workload: "smallbank", WasmSource: "c"}, true, "unset unless contract_runtime is wasm"},
		{Round{Workload: "smallbank", ContractRuntime: "wasm", WasmModule: "x.wasm", WasmSource: "c"}, true, "wasm_module is unset"},
	} {
		r := tc.r
		r.EnsureDefaults()
		if tc.net {
			r.embeddedDefaults()
		}
		err := r.Validate(tc.net)
		if tc.errHas == "" && err != nil || tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)) {
			t.Errorf("%+v: Validate = %v, want %q", tc.r, err, tc.errHas)
		}
	}
}

// TestWasmModulesFromFile: a round with wasm_module runs that file's code
// as the workload's contract.
func TestWasmModulesFromFile(t *testing.T) {
	path := t.TempDir() + "/m.wasm"
	if err := writeFile(path, []byte("\x00asm\x01\x00\x00\x00")); err != nil {
		t.Fatal(err)
	}
	r := Round{Label: "w", Workload: "smallbank", ContractRuntime: RuntimeWasm, WasmModule: path}
	m, err := r.wasmModules()
	if err != nil || string(m["smallbank"]) != "\x00asm\x01\x00\x00\x00" {
		t.Fatalf("wasmModules = %q, %v", m, err)
	}
	r.WasmModule = path + ".missing"
	if _, err := r.wasmModules(); err == nil || !strings.Contains(err.Error(), `round "w": contract_runtime wasm`) {
		t.Fatalf("missing module: %v", err)
	}
	if m, err := (&Round{Workload: "smallbank"}).wasmModules(); m != nil || err != nil {
		t.Fatalf("builtin round: %v, %v", m, err)
	}
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }
