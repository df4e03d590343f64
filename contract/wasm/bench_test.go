package wasm_test

import (
	"testing"

	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/contract/wasm/wasmtest"
	"github.com/strand-ledger/strand/contracts/smallbank"
)

// BenchmarkInvoke is the cost of one call, pool and memory reset included:
// Smallbank's send_payment as a Go module, a C module and built in, and
// the C echo.
func BenchmarkInvoke(b *testing.B) {
	for _, r := range resets {
		b.Run(r.name, func(b *testing.B) { benchmarkInvoke(b, wasm.Options{CopyOnWrite: r.cow}) })
	}
}

func benchmarkInvoke(b *testing.B, opts wasm.Options) {
	e := engine(b, opts)
	sb := compile(b, e, wasmtest.Go(b, "examples/smallbank"))
	for _, bc := range []struct {
		name string
		c    contract.Contract
		fn   string
		args []string
	}{
		{"smallbank-wasm", sb, "send_payment", []string{"1", "2", "1"}},
		{"smallbank-c", compile(b, e, wasmtest.C(b, "examples/smallbank-c/smallbank.c")), "send_payment", []string{"1", "2", "1"}},
		{"smallbank-builtin", smallbank.New(), "send_payment", []string{"1", "2", "1"}},
		{"c-echo", compile(b, e, misbehave(b)), "echo", []string{"x"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := newStub(bc.fn, bc.args...)
			s.state["checking_1"], s.state["checking_2"] = []byte("1000000000"), []byte("0")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.c.Invoke(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInstantiate is what a call would cost without the pool: a new
// instance and its _initialize.
func BenchmarkInstantiate(b *testing.B) {
	for _, bc := range []struct{ name, src string }{{"go-smallbank", "examples/smallbank"}, {"c", ""}} {
		b.Run(bc.name, func(b *testing.B) {
			e := engine(b, wasm.Options{Pool: 1})
			code := misbehave(b)
			if bc.src != "" {
				code = wasmtest.Go(b, bc.src)
			}
			m := compile(b, e, code)
			for b.Loop() {
				wasm.Instantiate(m)
			}
		})
	}
}
