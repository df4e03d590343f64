package smallbank

import (
	"testing"

	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/contract/wasm/wasmtest"
)

// wasmBank is Smallbank built with GOOS=wasip1 from examples/smallbank
// and compiled by the WebAssembly runtime.
func wasmBank(t *testing.T) contract.Contract {
	t.Helper()
	e, err := wasm.NewEngine(wasm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	m, err := e.Compile(wasmtest.Go(t, "examples/smallbank"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
