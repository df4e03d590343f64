package zip215

import (
	"crypto/ed25519"
	"crypto/sha512"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"filippo.io/edwards25519"

	"github.com/strand-ledger/strand/internal/touch"
)

// Window is the default width in bits of the signed digits k is recoded
// into, and PinnedWindow the width for keys verified all the time (a
// channel's peers and orderers, hot clients). A table of width w holds the
// multiples 1..2^(w-1) of 2^(w·i)·(−A) for each of windows(w) windows, so
// k·(−A) costs at most windows(w) point additions and no doublings, for
// 160·2^(w-1)·windows(w) bytes (BenchmarkWindows measures each width).
const (
	Window       = 4
	PinnedWindow = 8
	// BaseWindow is the width of the one process-wide table for B.
	BaseWindow = 8
	// MaxWindow bounds the width a table may have: the recoding reads
	// two bytes at a time.
	MaxWindow = 8
	minWindow = 2
)

// scalarBits bounds the scalars recoded: s is canonical and k reduced,
// both below L < 2^253.
const scalarBits = 253

// windows is how many signed digits of width w cover a scalar below
// 2^scalarBits with no carry out of the top digit: the top window then
// holds at most w-1 bits, whose value plus a carry stays <= 2^(w-1).
func windows(w int) int { return (scalarBits + w) / w } // ceil((scalarBits+1)/w)

// pointBytes is the in-memory size of one table entry.
const pointBytes = int(unsafe.Sizeof(edwards25519.Point{}))

// multiples holds, for one point P and a width w, the points j·2^(w·i)·P
// for every window i < windows(w) and digit j in 1..2^(w-1), at
// points[i·2^(w-1)+j-1]. It is immutable once built.
type multiples struct {
	points []edwards25519.Point
	window int
}

// newMultiples builds the multiples of p at width w with Add and Double
// only: 2^(w-1)·windows(w) additions.
func newMultiples(p *edwards25519.Point, w int) multiples {
	digits := 1 << (w - 1)
	m := multiples{points: make([]edwards25519.Point, windows(w)*digits), window: w}
	base := new(edwards25519.Point).Set(p) // 2^(w·i)·P
	for i := range windows(w) {
		row := m.points[i*digits : (i+1)*digits]
		row[0].Set(base)
		for j := 1; j < digits; j++ {
			row[j].Add(&row[j-1], base)
		}
		// next base = 2^w·base = 2·(2^(w-1)·base)
		base.Double(&row[digits-1])
	}
	return m
}

// addMult sets acc = acc + k·P, where k is a 32-byte little-endian scalar
// below 2^scalarBits, by adding or subtracting one entry per non-zero
// signed digit of k.
func (m *multiples) addMult(acc *edwards25519.Point, k *[32]byte) {
	var buf [(scalarBits + minWindow) / minWindow]int16
	digits := recode(buf[:windows(m.window)], k, m.window)
	per := 1 << (m.window - 1)
	// Touch every entry the additions will read before the first one:
	// the loads are independent, so their cache misses overlap instead of
	// stalling one addition each (a node's other work evicts the tables
	// between verifications; BenchmarkVerifyKeys/cold).
	var touched uint64
	for i, d := range digits {
		if d != 0 {
			touched += touch.Words(unsafe.Pointer(&m.points[i*per+int(max(d, -d))-1]), uintptr(pointBytes))
		}
	}
	runtime.KeepAlive(touched)
	for i, d := range digits {
		switch {
		case d > 0:
			acc.Add(acc, &m.points[i*per+int(d)-1])
		case d < 0:
			acc.Subtract(acc, &m.points[i*per-int(d)-1])
		}
	}
}

// recode writes k (little-endian, below 2^scalarBits) into out as
// len(out) = windows(w) signed digits in [-(2^(w-1)-1), 2^(w-1)], least
// significant first: k = Σ out[i]·2^(w·i). It returns out.
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
	if carry != 0 || k[31]>>(scalarBits-248) != 0 {
		panic("zip215: recoded scalar is not below 2^253") // callers pass reduced scalars
	}
	return out
}

// bitsAt returns at least MaxWindow bits of k (little-endian) starting at
// bit pos; bits past 255 read as zero.
func bitsAt(k *[32]byte, pos int) uint {
	idx := pos / 8
	v := uint(k[idx])
	if idx+1 < 32 {
		v |= uint(k[idx+1]) << 8
	}
	return v >> (pos % 8)
}

// Table is the precomputed verifier of one Ed25519 public key A: the
// multiples of −A at its width, and A's encoding as given (k hashes those
// bytes, not a re-encoding). It is immutable and safe for concurrent use.
type Table struct {
	pub  [ed25519.PublicKeySize]byte
	negA multiples
}

// NewTable builds the table of pub with the default width Window.
func NewTable(pub []byte) (*Table, error) { return NewTableWindow(pub, Window) }

// NewTableWindow builds the table of pub with width w (2 to MaxWindow).
// pub must be 32 bytes that decode as a point, non-canonical encodings of
// y included (edwards25519's SetBytes), as under ZIP-215: a key that does
// not decode has no table, and no signature verifies under it.
func NewTableWindow(pub []byte, w int) (*Table, error) {
	if w < minWindow || w > MaxWindow {
		return nil, fmt.Errorf("zip215: table width %d, expected %d to %d bits", w, minWindow, MaxWindow)
	}
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("zip215: public key of %d bytes, expected %d", len(pub), ed25519.PublicKeySize)
	}
	a, err := new(edwards25519.Point).SetBytes(pub)
	if err != nil {
		return nil, fmt.Errorf("zip215: public key %x: %w", pub, err)
	}
	t := &Table{negA: newMultiples(a.Negate(a), w)}
	copy(t.pub[:], pub)
	return t, nil
}

// Window is the table's width in bits.
func (t *Table) Window() int { return t.negA.window }

// Size is the table's memory in bytes (the point array; the header is
// negligible).
func (t *Table) Size() int { return len(t.negA.points) * pointBytes }

// TableSize is the Size of any table of width w (2 to MaxWindow).
func TableSize(w int) int { return windows(w) * (1 << (w - 1)) * pointBytes }

// baseTable is the multiples of B at BaseWindow, built on first use.
var baseTable = sync.OnceValue(func() *multiples {
	m := newMultiples(edwards25519.NewGeneratorPoint(), BaseWindow)
	return &m
})

// Verify reports whether sig is a valid signature of msg under the table's
// key by ZIP-215's rule, exactly as ed25519consensus.Verify answers: sig
// is 64 bytes, s = sig[32:] is canonical, R = sig[:32] decodes (non-
// canonical y accepted), and [8](s·B − k·A − R) = 0 for k = SHA-512(R ‖
// A ‖ msg) mod L. It is variable-time: keys and signatures are public.
func (t *Table) Verify(msg, sig []byte) bool {
	sg, ok := Parse(t.pub[:], msg, sig)
	if !ok {
		return false
	}
	k, r := &sg.K, &sg.R
	var sb, kb [32]byte
	copy(sb[:], sig[32:]) // s, canonical: its own encoding
	copy(kb[:], k.Bytes())
	acc := edwards25519.NewIdentityPoint()
	baseTable().addMult(acc, &sb)
	t.negA.addMult(acc, &kb)
	acc.Subtract(acc, r)
	acc.MultByCofactor(acc)
	return acc.Equal(edwards25519.NewIdentityPoint()) == 1
}

// Signature is what ZIP-215's rule reads of one signature before its
// equation: s, k = SHA-512(R ‖ A ‖ M) mod L, and R.
type Signature struct {
	S, K edwards25519.Scalar
	R    edwards25519.Point
}

// Parse checks what the rule checks of a signature alone (64 bytes, s
// canonical, R decoding with non-canonical y accepted) and hashes k over
// pub's bytes as given; ok is false, as the single check's answer, where
// one of those fails. The single check (Table.Verify) and the batch
// (identity.Batch) both start here, so they read a signature alike.
func Parse(pub, msg, sig []byte) (sg Signature, ok bool) {
	if len(sig) != ed25519.SignatureSize {
		return sg, false
	}
	if _, err := sg.S.SetCanonicalBytes(sig[32:]); err != nil {
		return sg, false
	}
	if _, err := sg.R.SetBytes(sig[:32]); err != nil {
		return sg, false
	}
	h := sha512.New()
	h.Write(sig[:32])
	h.Write(pub)
	h.Write(msg)
	var digest [sha512.Size]byte
	if _, err := sg.K.SetUniformBytes(h.Sum(digest[:0])); err != nil {
		return sg, false // cannot happen: 64 bytes
	}
	return sg, true
}
