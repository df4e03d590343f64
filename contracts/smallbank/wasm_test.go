package smallbank

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/contract/wasm/wasmtest"
)

// wasmBank is Smallbank built with GOOS=wasip1 from examples/smallbank
// and compiled by the WebAssembly runtime.
func wasmBank(t *testing.T) contract.Contract {
	t.Helper()
	return compileBank(t, wasmtest.Go(t, "examples/smallbank"))
}

// cBank is Smallbank written in C (examples/smallbank-c), built with
// clang for wasm32-wasi.
func cBank(t *testing.T) contract.Contract {
	t.Helper()
	return compileBank(t, wasmtest.C(t, "examples/smallbank-c/smallbank.c"))
}

func compileBank(t *testing.T, code []byte) contract.Contract {
	t.Helper()
	e, err := wasm.NewEngine(wasm.Options{CacheDir: wasmtest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	m, err := e.Compile(code)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFunctionsC and TestInvariantC run the Go contract's tables against
// the C build: the two must agree on every result, error status and
// message, state and read set.
func TestFunctionsC(t *testing.T) { testFunctions(t, cBank(t)) }

func TestInvariantC(t *testing.T) { testInvariant(t, cBank(t)) }

// TestSameAnswersC calls the built-in contract and the C build with odd
// input (quotes, control bytes, invalid UTF-8, long values, signs and
// limits of integers, every name of a function) and requires the same
// result or the same status and message.
func TestSameAnswersC(t *testing.T) {
	builtin, c := New(), cBank(t)
	long := strings.Repeat("é", 100)
	calls := [][]string{
		{"query", "a\"b\\c\x00\x7f\n\té"}, {"query", "\xff\xfeok"}, {"query", long}, {"query", strings.Repeat("x", 300)},
		{"deposit_checking", "a", "+5"}, {"deposit_checking", "a", "-0"}, {"deposit_checking", "a", "9223372036854775808"},
		{"deposit_checking", "a", "9223372036854775807"}, {"write_check", "a", "9223372036854775807"}, {"write_check", "a", ""},
		{"write_check", "a", " 1"}, {"write_check", "a", strings.Repeat("9", 80)}, {"DepositChecking", "b", "1"},
		{"depositChecking", "b", "1"}, {"WriteCheckHstore", "a", "1000"}, {"writeCheckHstore", "b", "31"},
		{"create_accounts", "9223372036854775000", "1000", "1", "1"}, {"create_accounts", "5", "x", "1", "1"},
		{"create_account", "d", "", "0", "0"}, {"createAccount", "é", "Émile", "1", "2"}, {"CreateAccount", "a", "x", "1", "1"},
		{"send_payment", "a", "a\x00", "1"}, {"sendPayment", "a", "b"}, {"amalgamate", "b", "a"}, {"Amalgamate", "z", "a"},
		{"transact_savings", "a", "9223372036854775807"}, {"TransactSavings", "b", "-9223372036854775808"},
		{"Query"}, {"query", "a", "b"}, {strings.Repeat("q", 70)}, {"\xff"}, {""},
	}
	for _, call := range calls {
		sb, sc := setup(t, builtin), setup(t, c)
		outB, errB := sb.Call(builtin, call[0], call[1:]...)
		outC, errC := sc.Call(c, call[0], call[1:]...)
		if string(outB) != string(outC) || fmt.Sprint(errB) != fmt.Sprint(errC) {
			t.Errorf("%q: built in %q, %v; C %q, %v", call, outB, errB, outC, errC)
		}
		if !reflect.DeepEqual(sb.Reads(), sc.Reads()) || !reflect.DeepEqual(sb.Writes(), sc.Writes()) || !reflect.DeepEqual(sb.Keys(), sc.Keys()) {
			t.Errorf("%q: built in read %q wrote %q; C read %q wrote %q", call, sb.Reads(), sb.Writes(), sc.Reads(), sc.Writes())
		}
	}
}
