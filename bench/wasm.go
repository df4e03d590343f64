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

// wasmExamples are the workloads that have a WebAssembly build of their
// contract: the contract's name and the Go main package of the module.
var wasmExamples = map[string]struct{ contract, pkg string }{
	"smallbank": {"smallbank", "./examples/smallbank"},
}

// wasmModules are the modules the round's network runs instead of built-in
// contracts: none for the builtin runtime; for wasm, the workload's
// contract from WasmModule, or built from its example source with `go
// build` (GOOS=wasip1 GOARCH=wasm) when WasmModule is unset.
func (r *Round) wasmModules() (map[string][]byte, error) {
	if r.ContractRuntime != RuntimeWasm {
		return nil, nil
	}
	ex := wasmExamples[r.Workload]
	var code []byte
	var err error
	if r.WasmModule != "" {
		code, err = os.ReadFile(r.WasmModule)
	} else {
		code, err = BuildWasm(ex.pkg)
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
	wasmBuilds.Lock()
	defer wasmBuilds.Unlock()
	if code, ok := wasmBuilds.code[pkg]; ok {
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
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s with GOOS=wasip1 GOARCH=wasm go build in %s: %v\n%s", pkg, root, err, b)
	}
	code, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	if wasmBuilds.code == nil {
		wasmBuilds.code = map[string][]byte{}
	}
	wasmBuilds.code[pkg] = code
	return code, nil
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
			return "", fmt.Errorf("building the module needs strand's source tree: run from inside it, or set wasm_module to a module built with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared ./examples/smallbank")
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
