package p256

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"fmt"
	"unsafe"

	"filippo.io/nistec"
)

// Window is the width in bits of the signed digits u2 is recoded into.
// Each window holds the multiples 1..2^(Window-1) of 2^(Window·i)·Q, so a
// table costs Windows·Digits points and u2·Q costs at most Windows point
// additions and no doublings. Window 5 measured best per byte here (see
// the package benchmarks): 52 windows of 16 points, 78 KiB a key.
const Window = 5

const (
	// Digits is the number of points per window: the digit magnitudes
	// 1..2^(Window-1).
	Digits = 1 << (Window - 1)
	// Windows covers 256 bits plus the carry out of the top digit.
	Windows = 256/Window + 1
)

// pointBytes is the in-memory size of one table entry.
const pointBytes = int(unsafe.Sizeof(nistec.P256Point{}))

// Table holds, for one public key Q, the points j·2^(Window·i)·Q for every
// window i < Windows and digit j in 1..Digits, at points[i*Digits+j-1].
// It is immutable after NewTable.
type Table struct {
	points []nistec.P256Point
}

// NewTable builds the table of pub, which must be a valid P-256 key (the
// curve is checked and the point is decoded with nistec's on-curve check).
func NewTable(pub *ecdsa.PublicKey) (*Table, error) {
	if pub == nil || pub.Curve != elliptic.P256() {
		return nil, fmt.Errorf("p256: public key is not on P-256")
	}
	enc, err := pub.Bytes()
	if err != nil {
		return nil, fmt.Errorf("p256: public key: %w", err)
	}
	q, err := nistec.NewP256Point().SetBytes(enc)
	if err != nil {
		return nil, fmt.Errorf("p256: public key: %w", err)
	}
	t := &Table{points: make([]nistec.P256Point, Windows*Digits)}
	base := q // 2^(Window·i)·Q
	for i := 0; i < Windows; i++ {
		row := t.points[i*Digits : (i+1)*Digits]
		row[0].Set(base)
		for j := 1; j < Digits; j++ {
			row[j].Add(&row[j-1], base)
		}
		// next base = 2^Window·base = 2·(Digits·base): one doubling of
		// the row's last entry.
		base = nistec.NewP256Point().Double(&row[Digits-1])
	}
	return t, nil
}

// Size is the table's memory in bytes (the point array; the header is
// negligible).
func (t *Table) Size() int { return len(t.points) * pointBytes }

// mult sets acc = k·Q, where k is a 32-byte big-endian scalar, by adding one
// table entry per non-zero signed digit of k.
func (t *Table) mult(acc *nistec.P256Point, k *[32]byte) {
	var digits [Windows]int8
	recode(&digits, k)
	var neg nistec.P256Point
	for i, d := range digits {
		switch {
		case d > 0:
			acc.Add(acc, &t.points[i*Digits+int(d)-1])
		case d < 0:
			neg.Negate(&t.points[i*Digits+int(-d)-1])
			acc.Add(acc, &neg)
		}
	}
}

// recode writes k (big-endian) as Windows signed digits in
// [-Digits, Digits], least significant first: k = Σ d_i·2^(Window·i).
func recode(out *[Windows]int8, k *[32]byte) {
	const mask = 1<<Window - 1
	carry := 0
	for i := range out {
		d := int(bitsAt(k, i*Window)&mask) + carry
		carry = 0
		if d > Digits {
			d -= 1 << Window
			carry = 1
		}
		out[i] = int8(d)
	}
}

// bitsAt returns at least Window bits of k (big-endian) starting at bit
// position pos from the least significant end; bits past 255 read as zero.
func bitsAt(k *[32]byte, pos int) uint {
	var v uint
	for b := 0; b < 2; b++ { // two bytes cover any Window <= 8 bits
		idx := pos/8 + b // byte index from the little end
		if idx < 32 {
			v |= uint(k[31-idx]) << (8 * b)
		}
	}
	return v >> (pos % 8)
}
