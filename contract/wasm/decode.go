package wasm

import "fmt"

// reader decodes the WebAssembly binary format (core spec 5.x) far enough
// to find instruction boundaries: it skips immediates without
// interpreting them. Every method fails, never panics, on bytes that run
// out or do not encode what is asked for.
type reader struct {
	b   []byte
	pos int
}

func (r *reader) fail(format string, args ...any) error {
	return fmt.Errorf("byte %d: %s", r.pos, fmt.Sprintf(format, args...))
}

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, r.fail("unexpected end")
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.pos {
		return nil, r.fail("%d bytes wanted, %d left", n, len(r.b)-r.pos)
	}
	b := r.b[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

// u32 decodes an unsigned LEB128 of at most 5 bytes whose value fits 32
// bits.
func (r *reader) u32() (uint32, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if i == 4 && c > 0x0F {
			return 0, r.fail("u32 LEB128 overflows 32 bits")
		}
		v |= uint32(c&0x7F) << (7 * i)
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, r.fail("u32 LEB128 longer than 5 bytes")
}

// skipLEB skips a signed or unsigned LEB128 of at most max bytes (5 for
// 32 and 33 bits, 10 for 64).
func (r *reader) skipLEB(max int) error {
	for i := 0; i < max; i++ {
		c, err := r.byte()
		if err != nil {
			return err
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return r.fail("LEB128 longer than %d bytes", max)
}

// name skips a length-prefixed byte string and returns it.
func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(int(n))
	return string(b), err
}

// Value types that encode as one byte: i32, i64, f32, f64, v128, funcref,
// externref. (Typed references of the GC proposal are refused: wazero
// does not run them.)
func isValType(c byte) bool {
	switch c {
	case 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
		return true
	}
	return false
}

func (r *reader) valType() error {
	c, err := r.byte()
	if err == nil && !isValType(c) {
		err = r.fail("value type 0x%02x is not one of i32, i64, f32, f64, v128, funcref, externref", c)
	}
	return err
}

// blockType skips a block type: 0x40 (empty), a value type, or a type
// index as a positive s33.
func (r *reader) blockType() error {
	if r.pos < len(r.b) && (r.b[r.pos] == 0x40 || isValType(r.b[r.pos])) {
		r.pos++
		return nil
	}
	if r.pos < len(r.b) && r.b[r.pos]&0x40 != 0 && r.b[r.pos]&0x80 == 0 {
		return r.fail("block type 0x%02x: a negative type index", r.b[r.pos])
	}
	return r.skipLEB(5)
}

// memarg skips a load's or store's alignment and offset (and the memory
// index that multi-memory adds when bit 6 of the alignment is set).
func (r *reader) memarg() error {
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return r.skipLEB(10) // a memory64 offset is a u64
}

// limits skips a table's or memory's limits.
func (r *reader) limits() error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if flags > 0x07 {
		return r.fail("limits flags 0x%02x", flags)
	}
	if err := r.skipLEB(10); err != nil {
		return err
	}
	if flags&1 != 0 {
		return r.skipLEB(10)
	}
	return nil
}

// immediates skips the immediates of the instruction whose opcode op was
// just read. globals is how many globals the original module has: an
// instruction naming any other global is refused, so that no contract
// can reach the fuel global added after them.
func (r *reader) immediates(op byte, globals uint32) error {
	switch {
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0B || op == 0x0F || op == 0x1A || op == 0x1B ||
		(op >= 0x45 && op <= 0xC4) || op == 0xD1:
		return nil // unreachable nop else end return drop select; numeric; ref.is_null
	case op >= 0x02 && op <= 0x04: // block loop if
		return r.blockType()
	case op == 0x0C || op == 0x0D || op == 0x10 || (op >= 0x20 && op <= 0x22) || op == 0x25 || op == 0x26 ||
		op == 0x3F || op == 0x40 || op == 0xD2:
		// br br_if call; local.get/set/tee; table.get/set; memory.size/grow; ref.func
		_, err := r.u32()
		return err
	case op == 0x23 || op == 0x24: // global.get global.set
		i, err := r.u32()
		if err == nil && i >= globals {
			err = r.fail("global %d: the module has %d", i, globals)
		}
		return err
	case op == 0x0E: // br_table
		n, err := r.u32()
		for i := uint64(0); err == nil && i <= uint64(n); i++ {
			_, err = r.u32()
		}
		return err
	case op == 0x11: // call_indirect: type, table
		if _, err := r.u32(); err != nil {
			return err
		}
		_, err := r.u32()
		return err
	case op == 0x1C: // select t*
		n, err := r.u32()
		for i := uint32(0); err == nil && i < n; i++ {
			err = r.valType()
		}
		return err
	case op >= 0x28 && op <= 0x3E: // loads and stores
		return r.memarg()
	case op == 0x41: // i32.const
		return r.skipLEB(5)
	case op == 0x42: // i64.const
		return r.skipLEB(10)
	case op == 0x43:
		_, err := r.bytes(4)
		return err
	case op == 0x44:
		_, err := r.bytes(8)
		return err
	case op == 0xD0: // ref.null
		c, err := r.byte()
		if err == nil && c != 0x70 && c != 0x6F {
			err = r.fail("ref.null of type 0x%02x", c)
		}
		return err
	case op == 0xFC:
		return r.miscImmediates()
	case op == 0xFD:
		return r.simdImmediates()
	}
	return r.fail("opcode 0x%02x is not one strand can meter (WebAssembly 2.0 without threads, tail calls, exceptions or GC)", op)
}

// miscImmediates skips a 0xFC instruction: saturating truncations (0-7),
// bulk memory and table operations (8-17).
func (r *reader) miscImmediates() error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	n := 0 // how many u32 immediates
	switch {
	case sub <= 7:
	case sub == 9 || sub == 11 || sub == 13 || sub == 15 || sub == 16 || sub == 17:
		n = 1 // data.drop; memory.fill; elem.drop; table.grow/size/fill
	case sub == 8 || sub == 10 || sub == 12 || sub == 14:
		n = 2 // memory.init; memory.copy; table.init; table.copy
	default:
		return r.fail("opcode 0xFC %d is not one strand can meter", sub)
	}
	for ; n > 0; n-- {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

// simdImmediates skips a 0xFD instruction (fixed-width SIMD).
func (r *reader) simdImmediates() error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	switch {
	case sub <= 11 || sub == 92 || sub == 93: // v128 loads and stores
		return r.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		_, err := r.bytes(16)
		return err
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		_, err := r.byte()
		return err
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		if err := r.memarg(); err != nil {
			return err
		}
		_, err := r.byte()
		return err
	case sub <= 0xFF:
		return nil
	}
	return r.fail("opcode 0xFD %d is not one strand can meter (relaxed SIMD)", sub)
}
