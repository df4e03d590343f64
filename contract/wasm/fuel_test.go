package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/strand-ledger/strand/contract/wasm/wasmtest"
)

// module assembles a WebAssembly binary from (id, body) sections.
func module(sections ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		out = append(out, s[0])
		out = binary.AppendUvarint(out, uint64(len(s)-1))
		out = append(out, s[1:]...)
	}
	return out
}

func sec(id byte, parts ...[]byte) []byte { return append([]byte{id}, bytes.Join(parts, nil)...) }

// body encodes a function body: no locals beyond those given, then code.
func body(locals []byte, code ...byte) []byte {
	b := append(locals, code...)
	return append(binary.AppendUvarint(nil, uint64(len(b))), b...)
}

// countModule exports count(n) -> n, which loops n times, and misc(),
// which runs one instruction of each immediate shape of the 0xFC and
// 0xFD prefixes.
func countModule() []byte {
	count := body([]byte{1, 1, 0x7F}, // one i32 local
		0x03, 0x40, // loop
		0x20, 0x01, 0x41, 0x01, 0x6A, 0x22, 0x01, // i = i + 1
		0x20, 0x00, 0x49, 0x0D, 0x00, // br_if 0 (i < n)
		0x0B,       // end
		0x20, 0x01, // local.get i
		0x0B)
	misc := []byte{
		0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0xFC, 11, 0x00, // memory.fill
		0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0xFC, 10, 0x00, 0x00, // memory.copy
		0x43, 0, 0, 0, 0, 0xFC, 0x00, 0x1A, // i32.trunc_sat_f32_s; drop
		0x41, 0x00, 0xFD, 0x00, 0x04, 0x80, 0x01, 0x1A, // v128.load align 16 offset 128; drop
		0xFD, 12, // v128.const
	}
	misc = append(misc, make([]byte, 16)...)
	misc = append(misc, 0xFD, 21, 3, 0x1A, // i8x16.extract_lane_s 3; drop
		0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0x1C, 0x01, 0x7F, 0x1A, // select (result i32); drop
		0x0B)
	return module(
		sec(1, []byte{2, 0x60, 1, 0x7F, 1, 0x7F, 0x60, 0, 0}), // (i32)->i32, ()->()
		sec(3, []byte{2, 0, 1}),
		sec(5, []byte{1, 0, 1}), // memory: 1 page
		sec(7, []byte{2, 5}, []byte("count"), []byte{0, 0, 4}, []byte("misc"), []byte{0, 1}), // exports
		sec(10, []byte{2}, count, body([]byte{0}, misc...)),
	)
}

// run compiles code with wazero and returns its instance and fuel global.
func run(t *testing.T, code []byte) (api.Module, api.MutableGlobal) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	mod, err := rt.Instantiate(ctx, code)
	if err != nil {
		t.Fatalf("the metered module does not run: %v", err)
	}
	fuel, ok := mod.ExportedGlobal(FuelExport).(api.MutableGlobal)
	if !ok || int64(fuel.Get()) != testStart {
		t.Fatalf("no mutable global %q holding %d", FuelExport, int64(testStart))
	}
	return mod, fuel
}

// TestMeterCharges: count(n) costs its entry (loop, local.get, end: 3)
// and n times its loop body (8 instructions, end included); one unit less
// traps with the global negative, and the results are unchanged.
func TestMeterCharges(t *testing.T) {
	code, err := meter(countModule(), testStart)
	if err != nil {
		t.Fatal(err)
	}
	mod, fuel := run(t, code)
	ctx := context.Background()
	for _, n := range []uint64{1, 10, 1000} {
		want := int64(3 + 8*n)
		fuel.Set(uint64(want))
		res, err := mod.ExportedFunction("count").Call(ctx, n)
		if err != nil || res[0] != n || fuel.Get() != 0 {
			t.Fatalf("count(%d) with %d units = %v, %v, %d left: want %d, none left", n, want, res, err, int64(fuel.Get()), n)
		}
		fuel.Set(uint64(want - 1))
		if _, err := mod.ExportedFunction("count").Call(ctx, n); err == nil || !strings.Contains(err.Error(), "unreachable") || int64(fuel.Get()) >= 0 {
			t.Fatalf("count(%d) with %d units = %v, %d left: want a trap with the fuel negative", n, want-1, err, int64(fuel.Get()))
		}
	}
	fuel.Set(100)
	if _, err := mod.ExportedFunction("misc").Call(ctx); err != nil {
		t.Fatalf("misc: %v", err)
	}
}

// testStart is the fuel global's initial value in these tests.
const testStart = 1 << 40

// TestMeterStart: a start function (run while the module is
// instantiated, before the host can set the global) is metered from the
// global's initial value: one that loops forever traps once it is used
// up, where unmetered it would never end.
func TestMeterStart(t *testing.T) {
	code := module(
		sec(1, []byte{1, 0x60, 0, 0}),
		sec(3, []byte{1, 0}),
		sec(8, []byte{0}), // start: function 0
		sec(10, []byte{1}, body([]byte{0}, 0x03, 0x40, 0x0C, 0x00, 0x0B, 0x0B)), // loop br 0 end
	)
	out, err := meter(code, 1000)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if _, err := rt.Instantiate(ctx, out); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("instantiating a module whose start function loops = %v, want the metering's trap (unreachable)", err)
	}
}

// TestMeterAddsSections: a module without global or export section gets
// them in the right place (wazero checks the order).
func TestMeterAddsSections(t *testing.T) {
	code := module(
		sec(1, []byte{1, 0x60, 0, 0}),
		sec(3, []byte{1, 0}),
		sec(0, []byte{4}, []byte("note"), []byte("custom sections stay")),
		sec(10, []byte{1}, body([]byte{0}, 0x0B)),
		sec(11, []byte{0}), // data
	)
	out, err := meter(code, testStart)
	if err != nil {
		t.Fatal(err)
	}
	run(t, out)
}

func TestMeterRefuses(t *testing.T) {
	withCode := func(code ...byte) []byte {
		return module(sec(1, []byte{1, 0x60, 0, 0}), sec(3, []byte{1, 0}), sec(10, []byte{1}, body([]byte{0}, code...)))
	}
	for _, tc := range []struct {
		name string
		code []byte
		has  string
	}{
		{"not wasm", []byte("\x00asn\x01\x00\x00\x00"), "not a WebAssembly 1.0 binary"},
		{"exports the fuel", module(sec(7, []byte{1, byte(len(FuelExport))}, []byte(FuelExport), []byte{0, 0})), "exports \"strand_fuel\" itself"},
		{"names the fuel global", withCode(0x23, 0x00, 0x1A, 0x0B), "global 0: the module has 0"},
		{"threads", withCode(0xFE, 0x03, 0x00, 0x0B), "opcode 0xfe"},
		{"exceptions", withCode(0x06, 0x40, 0x0B, 0x0B), "opcode 0x06"},
		{"unknown 0xFC", withCode(0xFC, 18, 0x0B), "opcode 0xFC 18"},
		{"relaxed SIMD", withCode(0xFD, 0x80, 0x02, 0x0B), "opcode 0xFD 256"},
		{"cut short", withCode(0x41), "unexpected end"},
		{"code after end", withCode(0x0B, 0x01), "1 bytes after the function's end"},
		{"long LEB", withCode(0x41, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x0B), "LEB128 longer than 5 bytes"},
		{"section overruns", append(withCode(0x0B)[:8], 10, 0x7F, 1), "section 10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := meter(tc.code, testStart)
			if !errors.Is(err, ErrMeter) || !strings.Contains(err.Error(), tc.has) {
				t.Fatalf("meter = %v, want ErrMeter containing %q", err, tc.has)
			}
		})
	}
}

// FuzzMeter: meter never panics, and a module that wazero accepts is
// either refused with ErrMeter or metered into one it accepts too.
func FuzzMeter(f *testing.F) {
	f.Add(countModule())
	f.Add(wasmtest.C(f, "contract/wasm/testdata/misbehave.c"))
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	f.Fuzz(func(t *testing.T, code []byte) {
		out, err := meter(code, testStart)
		if err != nil && !errors.Is(err, ErrMeter) {
			t.Fatalf("meter = %v, want nil or ErrMeter", err)
		}
		cm, cerr := rt.CompileModule(ctx, code)
		if cerr != nil {
			return
		}
		cm.Close(ctx)
		if err != nil {
			return
		}
		cm, cerr = rt.CompileModule(ctx, out)
		if cerr != nil {
			t.Fatalf("the module compiles, its metered form does not: %v", cerr)
		}
		cm.Close(ctx)
	})
}
