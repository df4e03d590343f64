package smallbank

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contracts/internal/memstub"
)

// setup returns a stub holding accounts "a" (100/200, named Alice) and "b"
// (10/20, named Bob).
func setup(t testing.TB, c contract.Contract) *memstub.Stub {
	t.Helper()
	s := memstub.New()
	for _, args := range [][]string{{"a", "Alice", "100", "200"}, {"b", "Bob", "10", "20"}} {
		if _, err := s.Call(c, "create_account", args...); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestFunctions(t *testing.T) { testFunctions(t, New()) }

// TestFunctionsWasm runs the same table against the WebAssembly build
// (examples/smallbank, the Go SDK): the two must agree on every result,
// error status and message, state and read set.
func TestFunctionsWasm(t *testing.T) { testFunctions(t, wasmBank(t)) }

func testFunctions(t *testing.T, c contract.Contract) {
	huge := strconv.FormatInt(1<<62, 10)
	for _, tc := range []struct {
		name   string
		fn     string
		args   []string
		status int               // 0: success
		errHas string            // part of the error message
		out    string            // the result, on success
		state  map[string]string // keys to check afterwards
		reads  []string          // the call's read set, when given
	}{
		{name: "create", fn: "create_account", args: []string{"c", "Carol", "5", "0"},
			state: map[string]string{"checking_c": "5", "savings_c": "0", "account_c": "Carol"},
			reads: []string{"checking_c", "savings_c"}},
		{name: "create exists", fn: "create_account", args: []string{"a", "X", "1", "1"}, status: 409, errHas: `account "a" already exists`},
		{name: "create negative", fn: "create_account", args: []string{"c", "C", "-1", "0"}, status: 400, errHas: `initial balances of account "c" are -1 and 0: want 0 or more`},
		{name: "create empty id", fn: "create_account", args: []string{"", "C", "1", "0"}, status: 400, errHas: `id "" is 0 bytes: want 1 to 256`},
		{name: "create long name", fn: "create_account", args: []string{"c", strings.Repeat("n", MaxNameBytes+1), "1", "0"}, status: 400, errHas: "name of account \"c\" is 1025 bytes"},
		{name: "create bad balance", fn: "create_account", args: []string{"c", "C", "x", "0"}, status: 400, errHas: `argument 3 (checking) of create_account: "x" is not an int64`},
		{name: "create many", fn: "create_accounts", args: []string{"7", "3", "1000000", "1000000"},
			state: map[string]string{"checking_7": "1000000", "savings_9": "1000000", "account_7": "", "checking_10": ""}},
		{name: "create many count", fn: "create_accounts", args: []string{"7", "0", "1", "1"}, status: 400, errHas: "count 0: want 1 to 1000"},
		{name: "create many first", fn: "create_accounts", args: []string{"-1", "2", "1", "1"}, status: 400, errHas: "first account -1: want 0 or more"},
		{name: "deposit", fn: "deposit_checking", args: []string{"a", "7"}, state: map[string]string{"checking_a": "107"},
			reads: []string{"checking_a"}},
		{name: "deposit zero", fn: "deposit_checking", args: []string{"a", "0"}, status: 400, errHas: "amount 0: want 1 or more"},
		{name: "deposit missing", fn: "deposit_checking", args: []string{"z", "1"}, status: 404, errHas: `account "z" does not exist (no checking_z)`},
		{name: "deposit overflow", fn: "deposit_checking", args: []string{"a", strconv.FormatInt(1<<63-1, 10)}, status: 400, errHas: "overflows int64"},
		{name: "write check", fn: "write_check", args: []string{"a", "150"}, state: map[string]string{"checking_a": "-50", "savings_a": "200"},
			reads: []string{"checking_a"}},
		{name: "write check hstore", fn: "write_check_hstore", args: []string{"a", "150"}, out: "150",
			state: map[string]string{"checking_a": "-50", "savings_a": "200"}},
		{name: "write check hstore penalty", fn: "write_check_hstore", args: []string{"b", "50"}, out: "51",
			state: map[string]string{"checking_b": "-41", "savings_b": "20"}},
		{name: "write check hstore zero", fn: "write_check_hstore", args: []string{"b", "0"}, status: 400, errHas: "amount 0: want 1 or more"},
		{name: "write check negative", fn: "write_check", args: []string{"a", "-5"}, status: 400, errHas: "amount -5: want 1 or more"},
		{name: "write check missing", fn: "write_check", args: []string{"z", "5"}, status: 404},
		{name: "transact savings", fn: "transact_savings", args: []string{"b", "5"}, state: map[string]string{"savings_b": "25", "checking_b": "10"},
			reads: []string{"savings_b"}},
		{name: "transact savings missing", fn: "transact_savings", args: []string{"z", "5"}, status: 404, errHas: "no savings_z"},
		{name: "transact savings zero", fn: "transact_savings", args: []string{"b", "0"}, status: 400},
		{name: "send payment", fn: "send_payment", args: []string{"a", "b", "30"}, state: map[string]string{"checking_a": "70", "checking_b": "40"},
			reads: []string{"checking_a", "checking_b"}},
		{name: "send payment all", fn: "send_payment", args: []string{"b", "a", "10"}, state: map[string]string{"checking_b": "0", "checking_a": "110"}},
		{name: "send payment insufficient", fn: "send_payment", args: []string{"b", "a", "11"}, status: 409,
			errHas: `insufficient funds: account "b" has 10 in checking, the payment is 11`},
		{name: "send payment same", fn: "send_payment", args: []string{"a", "a", "1"}, status: 400, errHas: `src and dst are both account "a"`},
		{name: "send payment missing dst", fn: "send_payment", args: []string{"a", "z", "1"}, status: 404, errHas: `account "z"`},
		{name: "send payment missing src", fn: "send_payment", args: []string{"z", "a", "1"}, status: 404, errHas: `account "z"`},
		{name: "send payment zero", fn: "send_payment", args: []string{"a", "b", "0"}, status: 400},
		{name: "amalgamate", fn: "amalgamate", args: []string{"a", "b"}, state: map[string]string{"checking_a": "0", "savings_a": "0", "checking_b": "310", "savings_b": "20"},
			reads: []string{"checking_a", "checking_b", "savings_a"}},
		{name: "amalgamate same", fn: "amalgamate", args: []string{"b", "b"}, status: 400},
		{name: "amalgamate missing", fn: "amalgamate", args: []string{"a", "z"}, status: 404},
		{name: "query", fn: "query", args: []string{"a"}, out: `{"checking":100,"savings":200}`},
		{name: "query missing", fn: "query", args: []string{"z"}, status: 404},
		{name: "query args", fn: "query", args: nil, status: 400, errHas: "query takes 1 argument (id string), got 0"},
		{name: "unknown", fn: "balance", args: []string{"a"}, status: 400, errHas: `unknown function "balance": want one of amalgamate, create_account, create_accounts, deposit_checking, query, send_payment, transact_savings, write_check`},
		{name: "camel name", fn: "depositChecking", args: []string{"a", huge}, state: map[string]string{"checking_a": strconv.FormatInt(100+1<<62, 10)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := setup(t, c)
			before := s.Keys()
			out, err := s.Call(c, tc.fn, tc.args...)
			if tc.status != 0 {
				memstub.WantError(t, fmt.Sprintf("%s%q", tc.fn, tc.args), err, tc.status, tc.errHas)
				if !reflect.DeepEqual(s.Keys(), before) {
					t.Fatalf("failed call changed the keys: %q", s.Keys())
				}
				return
			}
			if err != nil {
				t.Fatalf("%s%q: %v", tc.fn, tc.args, err)
			}
			if string(out) != tc.out {
				t.Fatalf("%s%q = %q, want %q", tc.fn, tc.args, out, tc.out)
			}
			for k, want := range tc.state {
				if got := s.Get(k); string(got) != want || (want == "" && got != nil) {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if tc.reads != nil && tc.fn != "create_account" {
				// Reads and writes match bench's Smallbank model.
				if !reflect.DeepEqual(s.Reads(), tc.reads) || !reflect.DeepEqual(s.Writes(), tc.reads) {
					t.Errorf("read %q and wrote %q, want both %q", s.Reads(), s.Writes(), tc.reads)
				}
			} else if tc.reads != nil && !reflect.DeepEqual(s.Reads(), tc.reads) {
				t.Errorf("read %q, want %q", s.Reads(), tc.reads)
			}
		})
	}
}

// TestInvariant runs 1,000 random operations, some of them failing, and
// checks that Σ(checking + savings) moves by exactly the deposits and
// savings transactions less the checks written, counting successes only.
func TestInvariant(t *testing.T) { testInvariant(t, New()) }

func TestInvariantWasm(t *testing.T) { testInvariant(t, wasmBank(t)) }

func testInvariant(t *testing.T, c contract.Contract) {
	s := memstub.New()
	const accounts = 20
	if _, err := s.Call(c, "create_accounts", "0", strconv.Itoa(accounts), "1000", "1000"); err != nil {
		t.Fatal(err)
	}
	want := int64(accounts * 2000)
	rng := rand.New(rand.NewPCG(1, 2))
	failures := 0
	for i := range 1000 {
		// ids up to accounts+1 so that some calls name missing accounts;
		// amounts from -1 so that some are refused; src may equal dst.
		src := strconv.Itoa(rng.IntN(accounts + 2))
		dst := strconv.Itoa(rng.IntN(accounts + 2))
		amount := int64(rng.IntN(202) - 1)
		amt := strconv.FormatInt(amount, 10)
		var fn string
		var args []string
		var delta int64
		switch rng.IntN(6) {
		case 0:
			fn, args, delta = "deposit_checking", []string{src, amt}, amount
		case 1:
			fn, args, delta = "write_check", []string{src, amt}, -amount
		case 2:
			fn, args, delta = "transact_savings", []string{src, amt}, amount
		case 3:
			fn, args = "send_payment", []string{src, dst, amt}
		case 4:
			fn, args = "amalgamate", []string{src, dst}
		case 5:
			fn, args = "query", []string{src}
		}
		if _, err := s.Call(c, fn, args...); err != nil {
			var ce *contract.Error
			if !errors.As(err, &ce) || ce.Status >= 500 {
				t.Fatalf("op %d %s%q: %v", i, fn, args, err)
			}
			failures++
			continue
		}
		want += delta
		if got := total(t, s); got != want {
			t.Fatalf("op %d %s%q: total %d, want %d", i, fn, args, got, want)
		}
	}
	if failures == 0 || failures > 500 {
		t.Fatalf("%d of 1000 operations failed: the mix should exercise both paths", failures)
	}
}

func total(t *testing.T, s *memstub.Stub) int64 {
	var sum int64
	for _, k := range s.Keys() {
		if strings.HasPrefix(k, "checking_") || strings.HasPrefix(k, "savings_") {
			n, err := strconv.ParseInt(string(s.Get(k)), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			sum += n
		}
	}
	return sum
}

// FuzzRouterArgs feeds arbitrary function names and arguments to the
// Smallbank router: it must never panic, and every error must be a
// *contract.Error with a 4xx status.
func FuzzRouterArgs(f *testing.F) {
	f.Add("deposit_checking", 2, "a", "5", "")
	f.Add("send_payment", 3, "a", "b", "9223372036854775807")
	f.Add("amalgamate", 2, "b", "a", "")
	f.Add("create_account", 4, "c", "Carol", "-1")
	f.Add("create_accounts", 4, "0", "1000", "1")
	f.Add("write_check", 2, "a", "abc", "")
	f.Add("query", 1, strings.Repeat("x", 300), "", "")
	f.Add("", 0, "", "", "")
	f.Add("Query", 5, "a", "b", "c")
	c := New()
	f.Fuzz(func(t *testing.T, fn string, n int, a, b, d string) {
		s := setup(t, c)
		args := []string{a, b, d, d}
		n = ((n % 5) + 5) % 5
		if _, err := s.Call(c, fn, args[:n]...); err != nil {
			var ce *contract.Error
			if !errors.As(err, &ce) || ce.Status < 400 || ce.Status >= 500 {
				t.Fatalf("%s%q: %v is not a 4xx *contract.Error", fn, args[:n], err)
			}
		}
	})
}
