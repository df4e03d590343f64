package contract

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Router is a Contract built by reflection over a Go value: each exported
// method whose first parameter is a Stub is a function of the contract.
//
// A function is a method of one of the shapes
//
//	func (T) Name(stub Stub, args...) (R, error)
//	func (T) Name(stub Stub, args...) error
//
// Clients call it by its Go name ("DepositChecking"), its lowerCamel name
// ("depositChecking") or its snake_case name ("deposit_checking").
//
// Arguments arrive as bytes and are decoded by the parameter's kind: a
// string and a []byte are taken as they are; a bool is strconv.ParseBool's
// text; integers and floats are decimal text (floats must be finite); any
// other type is decoded from JSON. The result R is encoded the same way
// back: a []byte as it is, a string as its bytes, a number or a bool as
// decimal text, anything else as JSON; a function without R returns nil.
//
// NewRouter skips exported methods whose first parameter is not a Stub (so
// a contract may have helpers such as ParamNames or String), and refuses a
// method that takes a Stub first but has another shape, since such a method
// was surely meant to be a function.
//
// Errors a function returns reach the caller unchanged. Errors the Router
// makes itself (unknown function, wrong argument count, argument that does
// not parse) are *Error with status 400. The Router does not recover
// panics: the endorser does.
//
// A Router is immutable after NewRouter and safe for concurrent use if the
// value it wraps is.
type Router struct {
	byName map[string]*function // every name a function answers to
	names  []string             // snake_case names, sorted
}

// ParamNamer is implemented by a contract that names its functions'
// parameters (those after the stub) for error messages. Keys are Go method
// names; a function without an entry has parameters "arg1", "arg2", ...
type ParamNamer interface {
	ParamNames() map[string][]string
}

// function is one callable method.
type function struct {
	goName    string
	name      string // snake_case
	method    reflect.Value
	params    []param
	hasResult bool
}

type param struct {
	name string
	typ  reflect.Type
}

var (
	stubType  = reflect.TypeFor[Stub]()
	errorType = reflect.TypeFor[error]()
)

// NewRouter returns a Router over impl's functions. It fails if impl has no
// function, if a method taking a Stub has an unsupported shape or type, if
// two methods answer to the same name, or if impl's ParamNames does not
// match its functions.
func NewRouter(impl any) (*Router, error) {
	if impl == nil {
		return nil, fmt.Errorf("contract: NewRouter(nil): want a value with functions")
	}
	v := reflect.ValueOf(impl)
	t := v.Type()
	r := &Router{byName: make(map[string]*function)}
	byGoName := make(map[string]*function)
	for i := 0; i < t.NumMethod(); i++ {
		m := t.Method(i)
		bound := v.Method(i)
		mt := bound.Type()
		if mt.NumIn() == 0 || mt.In(0) != stubType {
			continue
		}
		fn, err := newFunction(m.Name, bound, mt)
		if err != nil {
			return nil, fmt.Errorf("contract: %v.%s: %w", t, m.Name, err)
		}
		for _, alias := range []string{m.Name, lowerCamel(m.Name), fn.name} {
			if other, ok := r.byName[alias]; ok && other != fn {
				return nil, fmt.Errorf("contract: %v: methods %s and %s both answer to the name %q", t, other.goName, m.Name, alias)
			}
			r.byName[alias] = fn
		}
		byGoName[m.Name] = fn
		r.names = append(r.names, fn.name)
	}
	if len(r.names) == 0 {
		return nil, fmt.Errorf("contract: %v has no functions: want exported methods func(stub contract.Stub, args...) (R, error) or error", t)
	}
	sort.Strings(r.names)
	if pn, ok := impl.(ParamNamer); ok {
		if err := nameParams(pn.ParamNames(), byGoName); err != nil {
			return nil, fmt.Errorf("contract: %v.ParamNames: %w", t, err)
		}
	}
	return r, nil
}

// newFunction checks a method's shape and types.
func newFunction(goName string, bound reflect.Value, mt reflect.Type) (*function, error) {
	if mt.IsVariadic() {
		return nil, fmt.Errorf("variadic methods are not supported: want a fixed argument list")
	}
	fn := &function{goName: goName, name: snakeCase(goName), method: bound}
	for i := 1; i < mt.NumIn(); i++ {
		pt := mt.In(i)
		if err := checkType(pt); err != nil {
			return nil, fmt.Errorf("parameter %d: %w", i, err)
		}
		fn.params = append(fn.params, param{name: fmt.Sprintf("arg%d", i), typ: pt})
	}
	switch {
	case mt.NumOut() == 1 && mt.Out(0) == errorType:
	case mt.NumOut() == 2 && mt.Out(1) == errorType:
		if err := checkType(mt.Out(0)); err != nil {
			return nil, fmt.Errorf("result: %w", err)
		}
		fn.hasResult = true
	default:
		return nil, fmt.Errorf("returns %d values ending in %v: want (R, error) or error", mt.NumOut(), lastOut(mt))
	}
	return fn, nil
}

func lastOut(mt reflect.Type) any {
	if mt.NumOut() == 0 {
		return "nothing"
	}
	return mt.Out(mt.NumOut() - 1)
}

// nameParams applies a ParamNamer's names to the functions.
func nameParams(names map[string][]string, byGoName map[string]*function) error {
	for goName, ps := range names {
		fn, ok := byGoName[goName]
		if !ok {
			return fmt.Errorf("names parameters of %q, which is not a function", goName)
		}
		if len(ps) != len(fn.params) {
			return fmt.Errorf("names %d parameters of %s, which has %d after the stub", len(ps), goName, len(fn.params))
		}
		for i, p := range ps {
			if p == "" {
				return fmt.Errorf("parameter %d of %s has an empty name", i+1, goName)
			}
			fn.params[i].name = p
		}
	}
	return nil
}

// Functions returns the snake_case names of the functions, sorted.
func (r *Router) Functions() []string { return append([]string(nil), r.names...) }

// Invoke calls the function stub.Function() names with stub.Args().
func (r *Router) Invoke(stub Stub) ([]byte, error) {
	called := stub.Function()
	fn, ok := r.byName[called]
	if !ok {
		return nil, &Error{Status: 400, Message: fmt.Sprintf("unknown function %s: want one of %s",
			quote([]byte(called)), strings.Join(r.names, ", "))}
	}
	args := stub.Args()
	if len(args) != len(fn.params) {
		return nil, &Error{Status: 400, Message: fmt.Sprintf("%s takes %s, got %d", called, fn.signature(), len(args))}
	}
	in := make([]reflect.Value, 1+len(args))
	in[0] = reflect.ValueOf(&stub).Elem()
	for i, a := range args {
		p := fn.params[i]
		v, err := decodeArg(p.typ, a)
		if err != nil {
			return nil, &Error{Status: 400, Message: fmt.Sprintf("argument %d (%s) of %s: %v", i+1, p.name, called, err)}
		}
		in[i+1] = v
	}
	out := fn.method.Call(in)
	if errV := out[len(out)-1]; !errV.IsNil() {
		return nil, errV.Interface().(error)
	}
	if !fn.hasResult {
		return nil, nil
	}
	b, err := encodeResult(out[0])
	if err != nil {
		return nil, fmt.Errorf("contract: result of %s: %w", called, err)
	}
	return b, nil
}

// signature renders the parameter list: "2 arguments (id string, amount int64)".
func (fn *function) signature() string {
	if len(fn.params) == 0 {
		return "no arguments"
	}
	parts := make([]string, len(fn.params))
	for i, p := range fn.params {
		parts[i] = p.name + " " + typeName(p.typ)
	}
	noun := "arguments"
	if len(parts) == 1 {
		noun = "argument"
	}
	return fmt.Sprintf("%d %s (%s)", len(parts), noun, strings.Join(parts, ", "))
}
