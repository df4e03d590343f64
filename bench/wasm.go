package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Contract runtimes a round may ask for (Round.ContractRuntime).
const (
	RuntimeBuiltin = "builtin"
	RuntimeWasm    = "wasm"
)

// Sources of a workload's WebAssembly contract (Round.WasmSource).
const (
	WasmSourceC  = "c"  // the C example, built with clang: the default
	WasmSourceGo = "go" // the Go example, built with GOOS=wasip1 go build
)

// wasmExamples are the workloads that have a WebAssembly build of their
// contract: the contract's name, the Go main package of the module and
// the C source of the same contract.
//
// The C build is the default: a call of the Go module costs a few hundred
// microseconds (its runtime's memory reset and warm-up on every call),
// the C module's a few, and only the C one keeps end-to-end throughput
// near the built-in contract's (docs/contracts.md has both numbers).
var wasmExamples = map[string]struct{ contract, pkg, c string }{
	"smallbank": {"smallbank", "./examples/smallbank", "examples/smallbank-c/smallbank.c"},
}

// wasmModules are the modules the round's network runs instead of built-in
// contracts: none for the builtin runtime; for wasm, the workload's
// contract from WasmModule, or built from its example source when
// WasmModule is unset: the C one with clang (WasmSource "c", the
// default), the Go one with `go build` (GOOS=wasip1 GOARCH=wasm; "go").
func (r *Round) wasmModules() (map[string][]byte, error) {
	if r.ContractRuntime != RuntimeWasm {
		return nil, nil
	}
	ex := wasmExamples[r.Workload]
	var code []byte
	var err error
	switch {
	case r.WasmModule != "":
		code, err = os.ReadFile(r.WasmModule)
	case r.WasmSource == WasmSourceGo:
		code, err = BuildWasm(ex.pkg)
	default:
		code, err = BuildWasmC(ex.c)
	}
	if err != nil {
		return nil, fmt.Errorf("bench: round %q: contract_runtime wasm: %w", r.Label, err)
	}
	return map[string][]byte{ex.contract: code}, nil
}

var wasmBuilds struct {
	sync.Mutex
	code map[string][]byte
}

// BuildWasm builds a Go contract module from strand's source tree, pkg
// relative to its root (such as ./examples/smallbank), with the go
// command: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared. The
// working directory must be inside the source tree. Builds are kept for
// the process's later rounds.
func BuildWasm(pkg string) ([]byte, error) {
	return build("go:"+pkg, func(root, out string) *exec.Cmd {
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		return cmd
	}, "GOOS=wasip1 GOARCH=wasm go build")
}

// build runs command in the source root, once per key and process, and
// returns the module it wrote to out.
func build(key string, command func(root, out string) *exec.Cmd, with string) ([]byte, error) {
	wasmBuilds.Lock()
	defer wasmBuilds.Unlock()
	if code, ok := wasmBuilds.code[key]; ok {
		return code, nil
	}
	root, err := sourceRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "strand-wasm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "contract.wasm")
	cmd := command(root, out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s with %s in %s: %v\n%s", key, with, root, err, b)
	}
	code, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	if wasmBuilds.code == nil {
		wasmBuilds.code = map[string][]byte{}
	}
	wasmBuilds.code[key] = code
	return code, nil
}

// BuildWasmC builds a C contract module from strand's source tree, file
// relative to its root (such as examples/smallbank-c/smallbank.c), with
// clang, lld and wasi-libc: clang --target=wasm32-wasi -O2
// -mexec-model=reactor -Isdk/c. The working directory must be inside the
// source tree. Builds are kept for the process's later rounds.
func BuildWasmC(file string) ([]byte, error) {
	return build("c:"+file, func(root, out string) *exec.Cmd {
		return exec.Command("clang", "--target=wasm32-wasi", "-O2", "-mexec-model=reactor", "-Isdk/c", "-o", out, file)
	}, "clang, lld and wasi-libc (apt-get install clang lld wasi-libc libclang-rt-dev-wasm32), or wasm_source: go")
}

// sourceRoot is the nearest parent of the working directory whose go.mod
// is strand's.
func sourceRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/strand-ledger/strand\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("building the module needs strand's source tree: run from inside it, or set wasm_module to a module built as docs/contracts.md says")
		}
		dir = parent
	}
}

func runtimeName(r string) string {
	if r == "" {
		return RuntimeBuiltin
	}
	return r
}
