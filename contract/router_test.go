package contract

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// memStub is a map-backed Stub; the Router tests need only its function
// and arguments, and a little state.
type memStub struct {
	fn    string
	args  [][]byte
	state map[string][]byte
}

func call(fn string, args ...string) *memStub {
	s := &memStub{fn: fn, state: map[string][]byte{}}
	for _, a := range args {
		s.args = append(s.args, []byte(a))
	}
	return s
}

func (s *memStub) Function() string     { return s.fn }
func (s *memStub) Args() [][]byte       { return s.args }
func (s *memStub) TxID() string         { return "tx1" }
func (s *memStub) Channel() string      { return "ch" }
func (s *memStub) Creator() Creator     { return Creator{Name: "user1"} }
func (s *memStub) Timestamp() time.Time { return time.Unix(0, 0) }
func (s *memStub) GetState(k string) ([]byte, error) {
	return s.state[k], nil
}
func (s *memStub) GetMultipleStates(ks ...string) ([][]byte, error) {
	vs := make([][]byte, len(ks))
	for i, k := range ks {
		vs[i] = s.state[k]
	}
	return vs, nil
}
func (s *memStub) PutState(k string, v []byte) error { s.state[k] = v; return nil }
func (s *memStub) DelState(k string) error           { delete(s.state, k); return nil }
func (s *memStub) GetStateByRange(start, end string, n int, bm string) (Page, error) {
	return Page{}, errors.New("memStub: no range queries")
}
func (s *memStub) SetEvent(string, []byte) error { return nil }

type point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

// demo exercises every argument and result kind.
type demo struct{}

func (demo) ParamNames() map[string][]string {
	return map[string][]string{"DepositChecking": {"id", "amount"}}
}

func (demo) DepositChecking(stub Stub, id string, amount int64) error {
	return stub.PutState(id, fmt.Appendf(nil, "%d", amount))
}
func (demo) Bytes(_ Stub, b []byte) ([]byte, error)   { return b, nil }
func (demo) Str(_ Stub, s string) (string, error)     { return s + "!", nil }
func (demo) Flag(_ Stub, b bool) (bool, error)        { return !b, nil }
func (demo) Int(_ Stub, n int) (int, error)           { return n + 1, nil }
func (demo) Uint(_ Stub, n uint64) (uint64, error)    { return n + 1, nil }
func (demo) Float(_ Stub, f float64) (float64, error) { return f * 2, nil }
func (demo) Point(_ Stub, p point) (point, error)     { return point{p.Y, p.X}, nil }
func (demo) Points(_ Stub, ps []point) (int, error)   { return len(ps), nil }
func (demo) Any(_ Stub, s string) (any, error)        { return s, nil }
func (demo) None(_ Stub) error                        { return nil }
func (demo) GetID(_ Stub) (string, error)             { return "id", nil }
func (demo) Fail(_ Stub, status int) error {
	if status == 0 {
		return errors.New("plain failure")
	}
	return Statusf(status, "failed with %d", status)
}
func (demo) Panic(_ Stub) error      { panic("boom") }
func (demo) Helper(x int) int        { return x } // no Stub: skipped
func (demo) unexported(_ Stub) error { return nil }

func newDemo(t *testing.T) *Router {
	t.Helper()
	r, err := NewRouter(demo{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRouterFunctions(t *testing.T) {
	got := newDemo(t).Functions()
	want := []string{"any", "bytes", "deposit_checking", "fail", "flag", "float", "get_id",
		"int", "none", "panic", "point", "points", "str", "uint"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Functions() = %q, want %q", got, want)
	}
}

func TestRouterNames(t *testing.T) {
	r := newDemo(t)
	for _, name := range []string{"DepositChecking", "depositChecking", "deposit_checking"} {
		s := call(name, "alice", "5")
		if _, err := r.Invoke(s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := string(s.state["alice"]); got != "5" {
			t.Fatalf("%s wrote %q, want 5", name, got)
		}
	}
	for _, name := range []string{"GetID", "getID", "get_id"} {
		if out, err := r.Invoke(call(name)); err != nil || string(out) != "id" {
			t.Fatalf("%s = %q, %v", name, out, err)
		}
	}
}

func TestNameConversions(t *testing.T) {
	for _, tc := range []struct{ in, snake, camel string }{
		{"DepositChecking", "deposit_checking", "depositChecking"},
		{"Query", "query", "query"},
		{"GetID", "get_id", "getID"},
		{"ID", "id", "id"},
		{"HTTPServer", "http_server", "httpServer"},
		{"ReadModifyWrite", "read_modify_write", "readModifyWrite"},
		{"Get2Things", "get2_things", "get2Things"},
		{"Do_it", "do_it", "do_it"},
	} {
		if got := snakeCase(tc.in); got != tc.snake {
			t.Errorf("snakeCase(%q) = %q, want %q", tc.in, got, tc.snake)
		}
		if got := lowerCamel(tc.in); got != tc.camel {
			t.Errorf("lowerCamel(%q) = %q, want %q", tc.in, got, tc.camel)
		}
	}
}

func TestRouterResults(t *testing.T) {
	r := newDemo(t)
	for _, tc := range []struct {
		fn   string
		args []string
		want string
	}{
		{"bytes", []string{"\x00raw"}, "\x00raw"},
		{"str", []string{"hi"}, "hi!"},
		{"flag", []string{"true"}, "false"},
		{"int", []string{"-7"}, "-6"},
		{"uint", []string{"18446744073709551614"}, "18446744073709551615"},
		{"float", []string{"1.25"}, "2.5"},
		{"point", []string{`{"x":1,"y":2}`}, `{"x":2,"y":1}`},
		{"points", []string{`[{"x":1},{"y":2}]`}, "2"},
		{"points", []string{`null`}, "0"},
		{"any", []string{"text"}, "text"},
		{"none", nil, ""},
	} {
		out, err := r.Invoke(call(tc.fn, tc.args...))
		if err != nil {
			t.Errorf("%s%q: %v", tc.fn, tc.args, err)
			continue
		}
		if string(out) != tc.want {
			t.Errorf("%s%q = %q, want %q", tc.fn, tc.args, out, tc.want)
		}
		if tc.want == "" && out != nil {
			t.Errorf("%s = %q, want nil", tc.fn, out)
		}
	}
}

func TestRouterErrors(t *testing.T) {
	r := newDemo(t)
	long := strings.Repeat("9", 100)
	for _, tc := range []struct {
		fn   string
		args []string
		want string // the *Error's message
	}{
		{"nope", nil, `unknown function "nope": want one of any, bytes, deposit_checking, fail, flag, float, get_id, int, none, panic, point, points, str, uint`},
		{"", nil, `unknown function "": want one of any, bytes, deposit_checking, fail, flag, float, get_id, int, none, panic, point, points, str, uint`},
		{"Deposit_Checking", nil, `unknown function "Deposit_Checking"`},
		{"deposit_checking", []string{"alice"}, "deposit_checking takes 2 arguments (id string, amount int64), got 1"},
		{"depositChecking", []string{"a", "1", "2"}, "depositChecking takes 2 arguments (id string, amount int64), got 3"},
		{"deposit_checking", []string{"alice", "abc"}, `argument 2 (amount) of deposit_checking: "abc" is not an int64`},
		{"deposit_checking", []string{"alice", long}, `argument 2 (amount) of deposit_checking: "` + long[:64] + `"... (100 bytes) is not an int64`},
		{"bytes", nil, "bytes takes 1 argument (arg1 []byte), got 0"},
		{"none", []string{"x"}, "none takes no arguments, got 1"},
		{"flag", []string{"yes"}, `argument 1 (arg1) of flag: "yes" is not a bool`},
		{"int", []string{"1.5"}, `argument 1 (arg1) of int: "1.5" is not an int`},
		{"uint", []string{"-1"}, `argument 1 (arg1) of uint: "-1" is not a uint64`},
		{"float", []string{"NaN"}, `argument 1 (arg1) of float: "NaN" is not a finite float64`},
		{"float", []string{"1e999"}, `argument 1 (arg1) of float: "1e999" is not a finite float64`},
		{"point", []string{`{"x":`}, `argument 1 (arg1) of point: "{\"x\":" is not JSON for contract.point: unexpected end of JSON input`},
		{"points", []string{`{}`}, `argument 1 (arg1) of points: "{}" is not JSON for []contract.point`},
		{"fail", []string{"404"}, "failed with 404"},
	} {
		_, err := r.Invoke(call(tc.fn, tc.args...))
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%s%q: error %v is not a *contract.Error", tc.fn, tc.args, err)
			continue
		}
		wantStatus := 400
		if tc.fn == "fail" {
			wantStatus = 404
		}
		if ce.Status != wantStatus || !strings.HasPrefix(ce.Message, tc.want) {
			t.Errorf("%s%q: got status %d %q, want %d %q", tc.fn, tc.args, ce.Status, ce.Message, wantStatus, tc.want)
		}
	}
}

func TestRouterPassesErrorsAndPanics(t *testing.T) {
	r := newDemo(t)
	_, err := r.Invoke(call("fail", "0"))
	var ce *Error
	if err == nil || errors.As(err, &ce) || err.Error() != "plain failure" {
		t.Fatalf("fail(0) = %v, want the plain error unchanged", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("panic(): the Router recovered the contract's panic")
		}
	}()
	r.Invoke(call("panic"))
}

type (
	variadic  struct{}
	noError   struct{}
	threeOut  struct{}
	chanArg   struct{}
	ifaceArg  struct{}
	funcRes   struct{}
	collide   struct{}
	none      struct{}
	badNames1 struct{ demo }
	badNames2 struct{ demo }
	badNames3 struct{ demo }
)

func (variadic) F(_ Stub, xs ...int) error        { return nil }
func (noError) F(_ Stub) int                      { return 0 }
func (threeOut) F(_ Stub) (int, int, error)       { return 0, 0, nil }
func (chanArg) F(_ Stub, c chan int) error        { return nil }
func (ifaceArg) F(_ Stub, e error) error          { return nil }
func (funcRes) F(_ Stub) (func(), error)          { return nil, nil }
func (collide) DoIt(_ Stub) error                 { return nil }
func (collide) Do_it(_ Stub) error                { return nil }
func (none) Helper() int                          { return 0 }
func (badNames1) ParamNames() map[string][]string { return map[string][]string{"Nope": {"x"}} }
func (badNames2) ParamNames() map[string][]string { return map[string][]string{"Str": {"a", "b"}} }
func (badNames3) ParamNames() map[string][]string { return map[string][]string{"Str": {""}} }

func TestNewRouterRefuses(t *testing.T) {
	for _, tc := range []struct {
		impl any
		want string
	}{
		{nil, "NewRouter(nil)"},
		{none{}, "contract.none has no functions"},
		{variadic{}, "contract.variadic.F: variadic methods are not supported"},
		{noError{}, "contract.noError.F: returns 1 values ending in int: want (R, error) or error"},
		{threeOut{}, "contract.threeOut.F: returns 3 values ending in error"},
		{chanArg{}, "contract.chanArg.F: parameter 1: type chan int is not supported"},
		{ifaceArg{}, "contract.ifaceArg.F: parameter 1: interface type error is not supported"},
		{funcRes{}, "contract.funcRes.F: result: type func() is not supported"},
		{collide{}, `both answer to the name "do_it"`},
		{badNames1{}, `names parameters of "Nope", which is not a function`},
		{badNames2{}, "names 2 parameters of Str, which has 1 after the stub"},
		{badNames3{}, "parameter 1 of Str has an empty name"},
	} {
		_, err := NewRouter(tc.impl)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewRouter(%T) = %v, want an error containing %q", tc.impl, err, tc.want)
		}
	}
}

func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{CheckKey("uuid", ""), `uuid "" is 0 bytes: want 1 to 1024`},
		{CheckKey("uuid", strings.Repeat("k", MaxKeyBytes+1)), "is 1025 bytes: want 1 to 1024"},
		{CheckValue("value of k", make([]byte, MaxValueBytes+1)), "value of k is 4194305 bytes: want at most 4194304"},
	} {
		var ce *Error
		if !errors.As(tc.err, &ce) || ce.Status != 400 || !strings.Contains(ce.Message, tc.want) {
			t.Errorf("got %v, want status 400 containing %q", tc.err, tc.want)
		}
	}
	if CheckKey("k", "k") != nil || CheckValue("v", make([]byte, MaxValueBytes)) != nil {
		t.Error("valid key or value refused")
	}
}
