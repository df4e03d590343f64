package wasm

import (
	"encoding/binary"
	"fmt"
)

// meterCode instruments every function body of a code section; g is the
// fuel global's index (the count of the module's own globals).
func meterCode(body []byte, g uint32) ([]byte, error) {
	r := &reader{b: body}
	n, err := r.u32()
	if err != nil {
		return nil, fmt.Errorf("%w: code section: %v", ErrMeter, err)
	}
	out := binary.AppendUvarint(make([]byte, 0, len(body)+len(body)/4), uint64(n))
	var fn []byte
	for i := uint32(0); i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("%w: code section, function body %d: %v", ErrMeter, i, err)
		}
		b, err := r.bytes(int(size))
		if err != nil {
			return nil, fmt.Errorf("%w: code section, function body %d: %v", ErrMeter, i, err)
		}
		if fn, err = meterBody(fn[:0], b, g); err != nil {
			return nil, fmt.Errorf("%w: code section, function body %d: %v", ErrMeter, i, err)
		}
		out = binary.AppendUvarint(out, uint64(len(fn)))
		out = append(out, fn...)
	}
	if r.pos != len(body) {
		return nil, fmt.Errorf("%w: code section: %d bytes after %d function bodies", ErrMeter, len(body)-r.pos, n)
	}
	return out, nil
}

// charge is where a charge goes in a body and what it charges.
type charge struct {
	at   int // offset in the body: the instruction it precedes
	cost int64
}

// meterBody appends to dst the function body b with a charge at its
// start and after the block type of every loop.
func meterBody(dst, b []byte, g uint32) ([]byte, error) {
	r := &reader{b: b}
	groups, err := r.u32() // locals: (count, type) groups
	for i := uint32(0); err == nil && i < groups; i++ {
		if _, err = r.u32(); err == nil {
			err = r.valType()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("locals: %v", err)
	}
	// The first pass finds the charges and their costs. open holds, per
	// open block, the charge it adds to: its own if it is a loop, else
	// the enclosing one's; the function's body is the outermost block.
	charges := []charge{{at: r.pos}}
	open := []int{0}
	for len(open) > 0 {
		op, err := r.byte()
		if err != nil {
			return nil, err
		}
		charges[open[len(open)-1]].cost++
		if err := r.immediates(op, g); err != nil {
			return nil, err
		}
		switch op {
		case 0x02, 0x04: // block, if
			open = append(open, open[len(open)-1])
		case 0x03: // loop: its body is entered at r.pos on every iteration
			charges = append(charges, charge{at: r.pos})
			open = append(open, len(charges)-1)
		case 0x0B:
			open = open[:len(open)-1]
		}
	}
	if r.pos != len(b) {
		return nil, r.fail("%d bytes after the function's end", len(b)-r.pos)
	}
	// The second pass copies the body, inserting the charges.
	last := 0
	for _, c := range charges {
		dst = append(dst, b[last:c.at]...)
		dst = appendCharge(dst, g, c.cost)
		last = c.at
	}
	return append(dst, b[last:]...), nil
}

// appendCharge appends the code that takes cost from the fuel global g and
// traps if it went negative:
//
//	global.get g; i64.const cost; i64.sub; global.set g
//	global.get g; i64.const 0; i64.lt_s; if; unreachable; end
//
// It leaves the operand stack as it found it.
func appendCharge(dst []byte, g uint32, cost int64) []byte {
	dst = binary.AppendUvarint(append(dst, 0x23), uint64(g))
	dst = appendSLEB(append(dst, 0x42), cost)
	dst = binary.AppendUvarint(append(dst, 0x7D, 0x24), uint64(g))
	dst = binary.AppendUvarint(append(dst, 0x23), uint64(g))
	return append(dst, 0x42, 0x00, 0x53, 0x04, 0x40, 0x00, 0x0B)
}
