package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/tetratelabs/wazero/api"

	"github.com/strand-ledger/strand/contract"
)

// hostFunc is one function a module may import.
type hostFunc struct {
	name            string
	params, results []api.ValueType
	fn              func(in *instance, mem api.Memory, stack []uint64)
}

func (f hostFunc) goFunc() api.GoModuleFunc {
	fn := f.fn
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		fn(current(ctx), mod.Memory(), stack)
	}
}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

func types(ts ...api.ValueType) []api.ValueType { return ts }

// maxMultiKeys bounds the keys of one get_multi.
const maxMultiKeys = 1 << 16

// hostFuncs is ABI v1: the functions of import module "strand". Pointers
// and lengths are i32 into the module's memory. A function that answers
// with bytes takes a buffer (dst, cap), writes the answer there when it
// fits and returns its length either way; an answer that does not fit
// stays pending until take. docs/contracts.md is the reference.
var hostFuncs = []hostFunc{
	{"input", types(i32, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		st := in.needStub("input")
		items := make([][]byte, 0, 1+len(st.Args()))
		items = append(items, []byte(st.Function()))
		items = append(items, st.Args()...)
		in.answer(mem, s, appendList(nil, false, items...))
	}},
	{"tx_id", types(i32, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		in.answer(mem, s, []byte(in.needStub("tx_id").TxID()))
	}},
	{"channel", types(i32, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		in.answer(mem, s, []byte(in.needStub("channel").Channel()))
	}},
	{"creator", types(i32, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		c := in.needStub("creator").Creator()
		in.answer(mem, s, appendList(nil, false, []byte(c.Org), []byte(c.Role), []byte(c.Name), c.Cert))
	}},
	{"timestamp", nil, types(i64), func(in *instance, mem api.Memory, s []uint64) {
		s[0] = uint64(in.needStub("timestamp").Timestamp().UnixNano())
	}},
	{"get", types(i32, i32, i32, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		key := in.str(mem, s[0], s[1])
		v, err := in.needStub("get").GetState(key)
		switch {
		case err != nil:
			s[0] = in.refused(err)
		case v == nil:
			s[0] = i32ret(retAbsent)
		default:
			s[0], s[1] = s[2], s[3]
			in.answer(mem, s, v)
		}
	}},
	{"get_multi", types(i32, i32, i32, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		keys, err := decodeList(in.read(mem, s[0], s[1]), maxMultiKeys)
		if err != nil {
			in.abortf(ErrBadCall, "get_multi: keys: %v", err)
		}
		vs, err := in.needStub("get_multi").GetMultipleStates(keys...)
		if err != nil {
			s[0] = in.refused(err)
			return
		}
		s[0], s[1] = s[2], s[3]
		in.answer(mem, s, appendList(nil, true, vs...))
	}},
	{"put", types(i32, i32, i32, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		key, val := in.str(mem, s[0], s[1]), in.read(mem, s[2], s[3])
		s[0] = in.status(in.needStub("put").PutState(key, val))
	}},
	{"del", types(i32, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		s[0] = in.status(in.needStub("del").DelState(in.str(mem, s[0], s[1])))
	}},
	{"range", types(i32, i32, i32, i32, i32, i32, i32, i32, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		start, end, bookmark := in.str(mem, s[0], s[1]), in.str(mem, s[2], s[3]), in.str(mem, s[4], s[5])
		p, err := in.needStub("range").GetStateByRange(start, end, int(int32(s[6])), bookmark)
		if err != nil {
			s[0] = in.refused(err)
			return
		}
		items := make([][]byte, 0, 1+2*len(p.KVs))
		items = append(items, []byte(p.Bookmark))
		for _, kv := range p.KVs {
			items = append(items, []byte(kv.Key), kv.Value)
		}
		s[0], s[1] = s[7], s[8]
		in.answer(mem, s, appendList(nil, false, items...))
	}},
	{"set_event", types(i32, i32, i32, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		name, payload := in.str(mem, s[0], s[1]), in.read(mem, s[2], s[3])
		s[0] = in.status(in.needStub("set_event").SetEvent(name, payload))
	}},
	{"take", types(i32, i32), types(i32), func(in *instance, mem api.Memory, s []uint64) {
		n := len(in.pending)
		if uint64(n) <= uint64(uint32(s[1])) {
			in.write(mem, s[0], in.pending)
			in.pending = nil
		}
		s[0] = uint64(n)
	}},
	{"result", types(i32, i32), nil, func(in *instance, mem api.Memory, s []uint64) {
		in.needStub("result")
		in.result = bytes.Clone(in.read(mem, s[0], s[1]))
	}},
	{"fail", types(i32, i32, i32), nil, func(in *instance, mem api.Memory, s []uint64) {
		in.needStub("fail")
		status, msg := int32(s[0]), in.str(mem, s[1], s[2])
		if status == 0 {
			in.failure = errors.New(msg)
		} else {
			in.failure = &contract.Error{Status: int(status), Message: msg}
		}
	}},
}

// needStub returns the call's stub, or ends a call made during
// _initialize, which has none.
func (in *instance) needStub(fn string) contract.Stub {
	if in.stub == nil {
		in.abortf(ErrBadCall, "%s.%s called during _initialize: the host functions serve only calls of %s", HostModule, fn, InvokeExport)
	}
	return in.stub
}

// answer writes b to the buffer (s[0], s[1]) if it fits, else keeps it
// pending; it returns the length in s[0].
func (in *instance) answer(mem api.Memory, s []uint64, b []byte) {
	if uint64(len(b)) <= uint64(uint32(s[1])) {
		in.write(mem, s[0], b)
		in.pending = nil
	} else {
		in.pending = b
	}
	s[0] = uint64(len(b))
}

// refused makes a stub's error pending for take and returns retError.
func (in *instance) refused(err error) uint64 {
	in.pending = []byte(err.Error())
	return i32ret(retError)
}

// i32ret is v as an i32 result on wazero's stack.
func i32ret(v int32) uint64 { return uint64(uint32(v)) }

func (in *instance) status(err error) uint64 {
	if err != nil {
		return in.refused(err)
	}
	return 0
}

func (in *instance) read(mem api.Memory, ptr, n uint64) []byte {
	b, ok := mem.Read(uint32(ptr), uint32(n))
	if !ok {
		in.abortf(ErrBadCall, "buffer at %d of %d bytes is outside the memory of %d bytes", uint32(ptr), uint32(n), mem.Size())
	}
	return b
}

func (in *instance) str(mem api.Memory, ptr, n uint64) string { return string(in.read(mem, ptr, n)) }

func (in *instance) write(mem api.Memory, ptr uint64, b []byte) {
	if !mem.Write(uint32(ptr), b) {
		in.abortf(ErrBadCall, "buffer at %d of %d bytes is outside the memory of %d bytes", uint32(ptr), len(b), mem.Size())
	}
}

// abortf ends the call from inside a host function: wazero turns the
// panic into the call's error, and describe reports in.abort.
func (in *instance) abortf(sentinel error, format string, args ...any) {
	in.abort = fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
	panic(in.abort)
}

// lookupHost finds an importable function by module and name.
func lookupHost(mod, name string) (hostFunc, bool) {
	var fns []hostFunc
	switch mod {
	case HostModule:
		fns = hostFuncs
	case WASIModule:
		fns = wasiFuncs
	}
	for _, f := range fns {
		if f.name == name {
			return f, true
		}
	}
	return hostFunc{}, false
}

func hostNames() []string {
	names := make([]string, len(hostFuncs))
	for i, f := range hostFuncs {
		names[i] = f.name
	}
	sort.Strings(names)
	return names
}
