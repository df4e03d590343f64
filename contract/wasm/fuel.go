package wasm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// FuelExport is the name of the i64 global that meter adds to a module
// and exports: the fuel left to the running call.
const FuelExport = "strand_fuel"

// Section ids (core spec 5.5.2).
const (
	secCustom = 0
	secImport = 2
	secGlobal = 6
	secExport = 7
	secCode   = 10
)

// sectionRank orders the known sections as a module must list them
// (custom sections may stand anywhere; the tag section, 13, of the
// exception proposal stands before the global section).
func sectionRank(id byte) int {
	switch id {
	case 13:
		return 55
	case 12: // data count
		return 95
	}
	return int(id) * 10
}

// meter returns code instrumented to count fuel. It adds a mutable i64
// global (exported as FuelExport, initialised to start, the budget of a
// start function; the host sets it again before _initialize and before
// every call) after the module's own and charges it at the entry of every
// function and at the head of every loop: any execution that does not end
// passes one of them infinitely often. A charge is the number of
// instructions of the function body or loop body that the charge covers,
// not counting those of nested loops (which charge their own): an upper
// bound of the instructions run until the next charge. When the global
// goes negative the injected code traps (unreachable) and the caller,
// seeing the global negative, reports ErrFuel.
//
// Invariant: the rest of the module is unchanged byte for byte, and no
// original instruction or export can name the added global (meter
// refuses them: they would be invalid in the original module).
func meter(code []byte, start int64) ([]byte, error) {
	if len(code) < 8 || !bytes.Equal(code[:4], []byte("\x00asm")) || binary.LittleEndian.Uint32(code[4:]) != 1 {
		return nil, fmt.Errorf("%w: not a WebAssembly 1.0 binary (want \\0asm and version 1)", ErrMeter)
	}
	type section struct {
		id   byte
		body []byte
	}
	var secs []section
	r := &reader{b: code, pos: 8}
	for r.pos < len(code) {
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		n, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("%w: section %d: %v", ErrMeter, id, err)
		}
		body, err := r.bytes(int(n))
		if err != nil {
			return nil, fmt.Errorf("%w: section %d: %v", ErrMeter, id, err)
		}
		secs = append(secs, section{id, body})
	}
	// The fuel global's index: after the imported and defined globals.
	var globals uint32
	for _, s := range secs {
		var n uint32
		var err error
		switch s.id {
		case secImport:
			n, err = importedGlobals(s.body)
		case secGlobal:
			n, err = (&reader{b: s.body}).u32()
		}
		if err != nil {
			return nil, fmt.Errorf("%w: section %d: %v", ErrMeter, s.id, err)
		}
		globals += n
	}
	haveGlobal, haveExport := false, false
	for i := range secs {
		s := &secs[i]
		var err error
		switch s.id {
		case secGlobal:
			haveGlobal = true
			if s.body, err = appendEntry(s.body, fuelGlobal(start)); err != nil {
				return nil, fmt.Errorf("%w: global section: %v", ErrMeter, err)
			}
		case secExport:
			haveExport = true
			if err := checkExports(s.body, globals); err != nil {
				return nil, err
			}
			if s.body, err = appendEntry(s.body, fuelExport(globals)); err != nil {
				return nil, fmt.Errorf("%w: export section: %v", ErrMeter, err)
			}
		case secCode:
			if s.body, err = meterCode(s.body, globals); err != nil {
				return nil, err
			}
		}
	}
	// A missing global or export section goes before the first known
	// section that must follow it.
	insert := func(id byte, body []byte) {
		at := len(secs)
		for i, s := range secs {
			if s.id != secCustom && sectionRank(s.id) > sectionRank(id) {
				at = i
				break
			}
		}
		secs = append(secs[:at], append([]section{{id, body}}, secs[at:]...)...)
	}
	if !haveGlobal {
		insert(secGlobal, append([]byte{1}, fuelGlobal(start)...))
	}
	if !haveExport {
		insert(secExport, append([]byte{1}, fuelExport(globals)...))
	}
	out := append([]byte{}, code[:8]...)
	for _, s := range secs {
		out = append(out, s.id)
		out = binary.AppendUvarint(out, uint64(len(s.body)))
		out = append(out, s.body...)
	}
	return out, nil
}

// fuelGlobal encodes the fuel global: mutable i64, initialised to start.
func fuelGlobal(start int64) []byte {
	return append(appendSLEB([]byte{0x7E, 0x01, 0x42}, start), 0x0B)
}

// fuelExport encodes the export of global index g as FuelExport.
func fuelExport(g uint32) []byte {
	e := binary.AppendUvarint(nil, uint64(len(FuelExport)))
	e = append(e, FuelExport...)
	e = append(e, 0x03)
	return binary.AppendUvarint(e, uint64(g))
}

// appendSLEB appends v as a signed LEB128.
func appendSLEB(dst []byte, v int64) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(dst, c)
		}
		dst = append(dst, c|0x80)
	}
}

// appendEntry returns a vector section's body with entry added: its
// count plus one, its entries, entry.
func appendEntry(body, entry []byte) ([]byte, error) {
	r := &reader{b: body}
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	if n == math.MaxUint32 {
		return nil, r.fail("%d entries", n)
	}
	out := binary.AppendUvarint(nil, uint64(n)+1)
	out = append(out, body[r.pos:]...)
	return append(out, entry...), nil
}

// importedGlobals counts the global imports of an import section.
func importedGlobals(body []byte) (uint32, error) {
	r := &reader{b: body}
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	var globals uint32
	for i := uint32(0); i < n; i++ {
		if _, err := r.name(); err != nil {
			return 0, err
		}
		if _, err := r.name(); err != nil {
			return 0, err
		}
		kind, err := r.byte()
		if err != nil {
			return 0, err
		}
		switch kind {
		case 0x00: // function: type index
			_, err = r.u32()
		case 0x01: // table: reference type, limits
			if err = r.valType(); err == nil {
				err = r.limits()
			}
		case 0x02: // memory
			err = r.limits()
		case 0x03: // global: value type, mutability
			globals++
			if err = r.valType(); err == nil {
				_, err = r.byte()
			}
		default:
			err = r.fail("import kind 0x%02x", kind)
		}
		if err != nil {
			return 0, err
		}
	}
	if r.pos != len(body) {
		return 0, r.fail("%d bytes after the imports", len(body)-r.pos)
	}
	return globals, nil
}

// checkExports refuses an export section that already exports FuelExport
// or a global the module does not have.
func checkExports(body []byte, globals uint32) error {
	r := &reader{b: body}
	n, err := r.u32()
	for i := uint32(0); err == nil && i < n; i++ {
		var name string
		var kind byte
		var idx uint32
		if name, err = r.name(); err != nil {
			break
		}
		if kind, err = r.byte(); err != nil {
			break
		}
		if idx, err = r.u32(); err != nil {
			break
		}
		if name == FuelExport {
			return fmt.Errorf("%w: the module exports %q itself; strand adds that export to count fuel", ErrMeter, FuelExport)
		}
		if kind == 0x03 && idx >= globals {
			err = r.fail("export %q of global %d: the module has %d", name, idx, globals)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: export section: %v", ErrMeter, err)
	}
	return nil
}
