package identity

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/strand-ledger/strand/identity/p256"
	"github.com/strand-ledger/strand/identity/zip215"
)

// DefaultKeyTableBytes bounds the memory of the precomputed verification
// tables a Registry builds for client keys: issue #22's bound of 64 MiB per
// node (at 78 KiB a P-256 table or 80 KiB an Ed25519 one, about 820
// client keys hold tables at once).
const DefaultKeyTableBytes = 64 << 20

// KeyTablePromoteAfter is how many verifications against a client key
// without a table it takes before the key gets one: a table costs about
// five P-256 or three Ed25519 verifications to build, so a key seen once
// or twice never pays.
const KeyTablePromoteAfter = 4

// KeyTableWidenAfter is how many verifications with a default-width
// table (p256.Window, zip215.Window) it takes before a client key's table
// is rebuilt at the pinned width (p256.PinnedWindow,
// zip215.PinnedWindow): a hot client key (the few identities that submit
// most transactions verify ~5 times per transaction on the network) then
// checks as fast as a peer's. An 8-bit P-256 table costs 1.7 ms to build
// and saves about 6 µs a check (identity/p256's BenchmarkWindows, w8/build
// and w5/verify against w8/verify), so it pays for itself within some
// 300 further checks; an 8-bit Ed25519 table costs 1.0 ms and saves about
// 4 µs (identity/zip215's BenchmarkWindows), some 250 checks. A key must
// have shown more use than that first.
const KeyTableWidenAfter = 1024

// wideShare is the share of the client-table limit that wide tables may
// hold: at most half, so that at 10,000 distinct keys the narrow tables
// still cover as many keys as the other half allows, and a few hundred
// hot keys cannot push every other key back to the standard library.
const wideShare = 2

// keyTables is a Registry's bounded cache of verification tables for
// client members' keys, P-256 (identity/p256) and Ed25519
// (identity/zip215) alike: both answer exactly as the library would, and
// the machinery (promotion, widening, the byte limit, CLOCK, metrics)
// sees only a keyTable's size and whether it is wide. Peers', orderers' and admins' members get
// their table when they are validated and keep it (they come from the
// channel's own orgs and are few); they are counted in Pinned* only.
//
// Eviction is CLOCK (second chance): a hit sets the member's referenced
// flag without a lock, and admission sweeps the ring under mu, clearing
// flags, until the bytes fit. An evicted member loses its table pointer
// and starts counting again.
//
// A client table starts at its algorithm's default width and is widened
// once to the pinned width after KeyTableWidenAfter hits (widen), if the
// wide tables then fit in limit/wideShare; eviction drops wide and narrow
// tables alike.
//
// Invariant: bytes == Σ size of the tables of members in ring, wide ==
// Σ size of those of them that are wide, bytes <= limit and wide <=
// limit/wideShare after every admission.
type keyTables struct {
	limit atomic.Int64 // bytes; changed at runtime by setLimit
	// stock: no tables at all, every verification through the library
	// (Registry.DisableKeyTables, for measuring the stock bound).
	stock bool
	// widenAfter is KeyTableWidenAfter (tests lower it).
	widenAfter int32

	mu    sync.Mutex
	ring  []*Member // members holding a client table; guarded by mu
	hand  int       // next ring slot to inspect; guarded by mu
	bytes int64     // guarded by mu
	wide  int64     // guarded by mu

	hits, misses, builds, widenings, evictions, buildErrors atomic.Uint64
	pinnedKeys, pinnedBytes                                 atomic.Int64
	keys, curBytes, wideBytes                               atomic.Int64 // mirrors for lock-free snapshots
}

// KeyTableMetrics is a snapshot of a Registry's verification tables.
type KeyTableMetrics struct {
	// Hits counts client-key verifications that used a precomputed table.
	Hits uint64 `metric:"counter"`
	// Misses counts client-key verifications without a table (the key not
	// yet seen often enough, or its table evicted).
	Misses uint64 `metric:"counter"`
	// Builds counts tables built for client keys.
	Builds uint64 `metric:"counter"`
	// Widenings counts client-key tables rebuilt at the pinned width
	// after heavy use.
	Widenings uint64 `metric:"counter"`
	// Evictions counts client-key tables dropped to stay within the byte
	// limit.
	Evictions uint64 `metric:"counter"`
	// Keys is the number of client keys holding a table.
	Keys int64 `metric:"gauge"`
	// Bytes is the memory of the client-key tables.
	Bytes int64 `metric:"gauge"`
	// WideBytes is the part of Bytes held by widened tables (at most half
	// of LimitBytes).
	WideBytes int64 `metric:"gauge"`
	// LimitBytes is the configured bound on Bytes.
	LimitBytes int64 `metric:"gauge"`
	// PinnedKeys is the number of peer, orderer and admin keys holding a
	// table built at validation (outside the client bound).
	PinnedKeys int64 `metric:"gauge"`
	// PinnedBytes is the memory of the pinned tables.
	PinnedBytes int64 `metric:"gauge"`
}

func (m KeyTableMetrics) String() string {
	return fmt.Sprintf("key tables: %d hits, %d misses, %d builds, %d widenings, %d evictions; %d client keys in %d of %d bytes (%d wide); %d pinned keys in %d bytes",
		m.Hits, m.Misses, m.Builds, m.Widenings, m.Evictions, m.Keys, m.Bytes, m.LimitBytes, m.WideBytes, m.PinnedKeys, m.PinnedBytes)
}

func (k *keyTables) metrics() KeyTableMetrics {
	return KeyTableMetrics{
		Hits: k.hits.Load(), Misses: k.misses.Load(), Builds: k.builds.Load(), Widenings: k.widenings.Load(),
		Evictions: k.evictions.Load(), Keys: k.keys.Load(), Bytes: k.curBytes.Load(), WideBytes: k.wideBytes.Load(),
		LimitBytes: k.limit.Load(),
		PinnedKeys: k.pinnedKeys.Load(), PinnedBytes: k.pinnedBytes.Load(),
	}
}

// keyTable is one member's precomputed verification table: ec for a
// P-256 key, ed for an Ed25519 key (exactly one is set). wide says it was
// built at its algorithm's pinned width (p256.PinnedWindow,
// zip215.PinnedWindow). It is immutable.
type keyTable struct {
	ec   *p256.Table
	ed   *zip215.Table
	size int64
	wide bool
}

// Window is the table's width in bits.
func (t *keyTable) Window() int {
	if t.ec != nil {
		return t.ec.Window()
	}
	return t.ed.Window()
}

// buildTable builds m's table at its algorithm's pinned width (wide) or
// default width.
func buildTable(m *Member, wide bool) (*keyTable, error) {
	if m.ec != nil {
		w := p256.Window
		if wide {
			w = p256.PinnedWindow
		}
		t, err := p256.NewTableWindow(m.ec, w)
		if err != nil {
			return nil, err
		}
		return &keyTable{ec: t, size: int64(t.Size()), wide: wide}, nil
	}
	w := zip215.Window
	if wide {
		w = zip215.PinnedWindow
	}
	t, err := zip215.NewTableWindow(m.ed.pub, w)
	if err != nil {
		return nil, err
	}
	return &keyTable{ed: t, size: int64(t.Size()), wide: wide}, nil
}

// wideSize is the size of m's table at its algorithm's pinned width.
func wideSize(m *Member) int64 {
	if m.ec != nil {
		return int64(p256.TableSize(p256.PinnedWindow))
	}
	return int64(zip215.TableSize(zip215.PinnedWindow))
}

// pin builds the table of a non-client member at its first signature
// check: at the pinned width for peers and orderers, whose keys sign
// every endorsement and block (P-256: 396 KiB, 18% faster a check than
// the default width; Ed25519: see zip215.PinnedWindow), and at the
// default width for admins, who sign rarely. Not at validation: a
// certificate that only authenticates a TLS connection (a node's TLS
// identity, which the cluster and read policies check as a member) never
// verifies a signature, and its table would be memory and a build spent
// for nothing (an idle Ed25519 network's orderer held two P-256 tables
// for the TLS certificates of nodes that had called it). Exactly one caller builds (the member's
// first use); checks that come meanwhile use the library.
func (k *keyTables) pin(m *Member) *keyTable {
	if k.stock || m.uses.Add(1) != 1 {
		return nil
	}
	t, err := buildTable(m, m.Role != RoleAdmin)
	if err != nil {
		k.buildErrors.Add(1) // the library path still verifies (and rejects)
		return nil
	}
	m.tab.Store(t)
	k.pinnedKeys.Add(1)
	k.pinnedBytes.Add(t.size)
	return t
}

// table returns the member's table for one verification, counting the
// use and building one when a client key has been seen often enough.
// Nil means verify with the library (crypto/ecdsa, ed25519consensus).
func (k *keyTables) table(m *Member) *keyTable {
	if t := m.tab.Load(); t != nil {
		if m.Role == RoleClient {
			k.hits.Add(1)
			if !m.ref.Load() {
				m.ref.Store(true)
			}
			if !t.wide {
				k.maybeWiden(m, t)
			}
		}
		return t
	}
	if m.Role != RoleClient {
		return k.pin(m)
	}
	if k.limit.Load() <= 0 {
		return nil
	}
	k.misses.Add(1)
	if m.uses.Add(1) != KeyTablePromoteAfter {
		return nil // exactly one caller builds; the rest go on meanwhile
	}
	t, err := buildTable(m, false)
	if err != nil || t.size > k.limit.Load() {
		k.buildErrors.Add(1)
		return nil
	}
	k.builds.Add(1)
	k.admit(m, t)
	return t
}

// maybeWiden counts a hit on m's narrow table t and, every
// KeyTableWidenAfter hits, tries to rebuild it at the pinned width. The
// count goes on where the wide tables are full, so the key tries again
// once CLOCK has freed room. Exactly one caller sees each multiple; the
// others keep verifying with t meanwhile.
func (k *keyTables) maybeWiden(m *Member, t *keyTable) {
	n := m.uses.Add(1) - KeyTablePromoteAfter
	if n <= 0 || n%k.widenAfter != 0 {
		return
	}
	size := wideSize(m)
	k.mu.Lock()
	fits := k.wide+size <= k.limit.Load()/wideShare
	k.mu.Unlock()
	if !fits {
		return
	}
	wt, err := buildTable(m, true)
	if err != nil {
		k.buildErrors.Add(1)
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	// m may have been evicted, or the wide share filled, while the table
	// was built: then it is dropped.
	if m.tab.Load() != t || k.wide+size > k.limit.Load()/wideShare {
		return
	}
	k.removeLocked(m, t)
	k.admitLocked(m, wt)
	k.widenings.Add(1)
}

func newKeyTables() *keyTables {
	k := &keyTables{widenAfter: KeyTableWidenAfter}
	k.limit.Store(DefaultKeyTableBytes)
	return k
}

// setLimit makes the byte limit bytes and evicts until the tables fit
// it (a node that joins or leaves a channel splits its budget anew).
func (k *keyTables) setLimit(bytes int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.limit.Store(bytes)
	for (k.bytes > bytes || k.wide > bytes/wideShare) && len(k.ring) > 0 {
		k.evictOneLocked()
	}
	k.storeGaugesLocked()
}

// admit installs t on m and evicts until the tables fit the limit.
func (k *keyTables) admit(m *Member, t *keyTable) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.admitLocked(m, t)
}

func (k *keyTables) admitLocked(m *Member, t *keyTable) {
	size := t.size
	for k.bytes+size > k.limit.Load() && len(k.ring) > 0 {
		k.evictOneLocked()
	}
	m.ref.Store(false)
	m.tab.Store(t)
	k.ring = append(k.ring, m)
	k.bytes += size
	if t.wide {
		k.wide += size
	}
	k.storeGaugesLocked()
}

// removeLocked takes m, which holds t, out of the ring without clearing
// its table pointer (a widening replaces it at once).
func (k *keyTables) removeLocked(m *Member, t *keyTable) {
	for i, r := range k.ring {
		if r == m {
			k.dropLocked(i, t)
			return
		}
	}
}

// dropLocked removes ring slot i, whose member held t, and its bytes.
func (k *keyTables) dropLocked(i int, t *keyTable) {
	size := t.size
	k.bytes -= size
	if t.wide {
		k.wide -= size
	}
	last := len(k.ring) - 1
	k.ring[i] = k.ring[last]
	k.ring[last] = nil
	k.ring = k.ring[:last]
	k.storeGaugesLocked()
}

func (k *keyTables) storeGaugesLocked() {
	k.keys.Store(int64(len(k.ring)))
	k.curBytes.Store(k.bytes)
	k.wideBytes.Store(k.wide)
}

// evictOneLocked advances the clock hand, giving referenced members a
// second chance, and drops the first unreferenced member's table.
func (k *keyTables) evictOneLocked() {
	for {
		if k.hand >= len(k.ring) {
			k.hand = 0
		}
		m := k.ring[k.hand]
		if m.ref.Load() {
			m.ref.Store(false)
			k.hand++
			continue
		}
		t := m.tab.Swap(nil)
		m.uses.Store(0)
		k.dropLocked(k.hand, t)
		k.evictions.Add(1)
		return
	}
}
