package p256

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"fmt"
	"runtime"
	"unsafe"

	"filippo.io/nistec"

	"github.com/strand-ledger/strand/internal/touch"
)

// Window is the default width in bits of the signed digits u2 is recoded
// into, and PinnedWindow the width for keys verified all the time (a
// channel's peers and orderers). A table of width w holds the multiples
// 1..2^(w-1) of 2^(w·i)·Q for each of 256/w+1 windows, so u2·Q costs at
// most 256/w+1 point additions and no doublings, for 96·2^(w-1)·(256/w+1)
// bytes: w 5 is 78 KiB and 52 additions, w 8 is 396 KiB and 33 (the
// package benchmarks: BenchmarkWindows).
const (
	Window       = 5
	PinnedWindow = 8
	// MaxWindow bounds the width a table may have: the recoding reads
	// two bytes at a time.
	MaxWindow = 8
	minWindow = 2
)

// windows is how many signed digits of width w cover 256 bits plus the
// carry out of the top digit.
func windows(w int) int { return 256/w + 1 }

// pointBytes is the in-memory size of one table entry.
const pointBytes = int(unsafe.Sizeof(nistec.P256Point{}))

// Table holds, for one public key Q and its width w, the points
// j·2^(w·i)·Q for every window i < windows(w) and digit j in 1..2^(w-1),
// at points[i·2^(w-1)+j-1]. It is immutable after NewTable.
type Table struct {
	points []nistec.P256Point
	window int
}

// NewTable builds the table of pub with the default width Window.
func NewTable(pub *ecdsa.PublicKey) (*Table, error) { return NewTableWindow(pub, Window) }

// NewTableWindow builds the table of pub with width w (2 to MaxWindow).
// pub must be a valid P-256 key (the curve is checked and the point is
// decoded with nistec's on-curve check).
func NewTableWindow(pub *ecdsa.PublicKey, w int) (*Table, error) {
	if w < minWindow || w > MaxWindow {
		return nil, fmt.Errorf("p256: table width %d, expected %d to %d bits", w, minWindow, MaxWindow)
	}
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
	digits := 1 << (w - 1)
	t := &Table{points: make([]nistec.P256Point, windows(w)*digits), window: w}
	base := q // 2^(w·i)·Q
	for i := range windows(w) {
		row := t.points[i*digits : (i+1)*digits]
		row[0].Set(base)
		for j := 1; j < digits; j++ {
			row[j].Add(&row[j-1], base)
		}
		// next base = 2^w·base = 2·(2^(w-1)·base): one doubling of the
		// row's last entry.
		base = nistec.NewP256Point().Double(&row[digits-1])
	}
	return t, nil
}

// Window is the table's width in bits.
func (t *Table) Window() int { return t.window }

// Size is the table's memory in bytes (the point array; the header is
// negligible).
func (t *Table) Size() int { return len(t.points) * pointBytes }

// TableSize is the Size of any table of width w (2 to MaxWindow).
func TableSize(w int) int { return windows(w) * (1 << (w - 1)) * pointBytes }

// mult sets acc = k·Q, where k is a 32-byte big-endian scalar, by adding one
// table entry per non-zero signed digit of k.
func (t *Table) mult(acc *nistec.P256Point, k *[32]byte) {
	var buf [256/minWindow + 1]int16
	digits := recode(buf[:windows(t.window)], k, t.window)
	per := 1 << (t.window - 1)
	// Touch every entry the additions will read before the first one:
	// the loads are independent, so their cache misses overlap instead of
	// stalling one addition each (a node's other work evicts the tables
	// between verifications; BenchmarkVerifyKeys/cold).
	var touched uint64
	for i, d := range digits {
		if d != 0 {
			touched += touch.Words(unsafe.Pointer(&t.points[i*per+int(max(d, -d))-1]), uintptr(pointBytes))
		}
	}
	runtime.KeepAlive(touched)
	var neg nistec.P256Point
	for i, d := range digits {
		switch {
		case d > 0:
			acc.Add(acc, &t.points[i*per+int(d)-1])
		case d < 0:
			neg.Negate(&t.points[i*per+int(-d)-1])
			acc.Add(acc, &neg)
		}
	}
}

// recode writes k (big-endian) into out as len(out) = windows(w) signed
// digits in [-2^(w-1), 2^(w-1)], least significant first:
// k = Σ out[i]·2^(w·i). It returns out.
func recode(out []int16, k *[32]byte, w int) []int16 {
	mask := uint(1)<<w - 1
	half := 1 << (w - 1)
	carry := 0
	for i := range out {
		d := int(bitsAt(k, i*w)&mask) + carry
		carry = 0
		if d > half {
			d -= 1 << w
			carry = 1
		}
		out[i] = int16(d)
	}
	return out
}

// bitsAt returns at least MaxWindow bits of k (big-endian) starting at bit
// position pos from the least significant end; bits past 255 read as zero.
func bitsAt(k *[32]byte, pos int) uint {
	var v uint
	for b := 0; b < 2; b++ { // two bytes cover any width <= 8 bits
		idx := pos/8 + b // byte index from the little end
		if idx < 32 {
			v |= uint(k[31-idx]) << (8 * b)
		}
	}
	return v >> (pos % 8)
}
