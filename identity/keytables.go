package identity

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/strand-ledger/strand/identity/p256"
)

// DefaultKeyTableBytes bounds the memory of the precomputed verification
// tables a Registry builds for client keys: issue #22's bound of 64 MiB per
// node (at 78 KiB a table, about 820 client keys hold tables at once).
const DefaultKeyTableBytes = 64 << 20

// KeyTablePromoteAfter is how many verifications against a client key
// without a table it takes before the key gets one: a table costs about
// five verifications to build, so a key seen once or twice never pays.
const KeyTablePromoteAfter = 4

// KeyTableWidenAfter is how many verifications with a default-width
// (p256.Window) table it takes before a client key's table is rebuilt at
// p256.PinnedWindow: a hot client key (the few identities that submit
// most transactions verify ~5 times per transaction on the network) then
// checks as fast as a peer's. An 8-bit table costs 1.7 ms to build and
// saves about 6 µs a check (identity/p256's BenchmarkWindows, w8/build
// and w5/verify against w8/verify), so it pays for itself within some
// 300 further checks; a key must have shown more use than that first.
const KeyTableWidenAfter = 1024

// wideShare is the share of the client-table limit that wide tables may
// hold: at most half, so that at 10,000 distinct keys the narrow tables
// still cover as many keys as the other half allows, and a few hundred
// hot keys cannot push every other key back to the standard library.
const wideShare = 2

// keyTables is a Registry's bounded cache of verification tables for
// client members' P-256 keys. Peers', orderers' and admins' members get
// their table when they are validated and keep it (they come from the
// channel's own orgs and are few); they are counted in Pinned* only.
//
// Eviction is CLOCK (second chance): a hit sets the member's referenced
// flag without a lock, and admission sweeps the ring under mu, clearing
// flags, until the bytes fit. An evicted member loses its table pointer
// and starts counting again.
//
// A client table starts at p256.Window bits and is widened once to
// p256.PinnedWindow after KeyTableWidenAfter hits (widen), if the wide
// tables then fit in limit/wideShare; eviction drops wide and narrow
// tables alike.
//
// Invariant: bytes == Σ Size of the tables of members in ring, wide ==
// Σ Size of those of them at p256.PinnedWindow, bytes <= limit and wide <=
// limit/wideShare after every admission.
type keyTables struct {
	limit int64
	// stock: no tables at all, every verification through crypto/ecdsa
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
		LimitBytes: k.limit,
		PinnedKeys: k.pinnedKeys.Load(), PinnedBytes: k.pinnedBytes.Load(),
	}
}

// pin builds the table of a non-client member at validation: of width
// PinnedWindow for peers and orderers, whose keys sign every endorsement
// and block (396 KiB, 18% faster a check than the default width), and of
// the default width for admins, who sign rarely.
func (k *keyTables) pin(m *Member) {
	if k.stock {
		return
	}
	w := p256.PinnedWindow
	if m.Role == RoleAdmin {
		w = p256.Window
	}
	t, err := p256.NewTableWindow(m.ec, w)
	if err != nil {
		k.buildErrors.Add(1) // the stdlib path still verifies (and rejects)
		return
	}
	m.tab.Store(t)
	k.pinnedKeys.Add(1)
	k.pinnedBytes.Add(int64(t.Size()))
}

// table returns the member's table for one verification, counting the
// use and building one when a client key has been seen often enough.
// Nil means verify with the standard library.
func (k *keyTables) table(m *Member) *p256.Table {
	if t := m.tab.Load(); t != nil {
		if m.Role == RoleClient {
			k.hits.Add(1)
			if !m.ref.Load() {
				m.ref.Store(true)
			}
			if t.Window() < p256.PinnedWindow {
				k.maybeWiden(m, t)
			}
		}
		return t
	}
	if m.Role != RoleClient || k.limit <= 0 {
		return nil
	}
	k.misses.Add(1)
	if m.uses.Add(1) != KeyTablePromoteAfter {
		return nil // exactly one caller builds; the rest go on meanwhile
	}
	t, err := p256.NewTable(m.ec)
	if err != nil || int64(t.Size()) > k.limit {
		k.buildErrors.Add(1)
		return nil
	}
	k.builds.Add(1)
	k.admit(m, t)
	return t
}

// maybeWiden counts a hit on m's narrow table t and, every
// KeyTableWidenAfter hits, tries to rebuild it at p256.PinnedWindow. The
// count goes on where the wide tables are full, so the key tries again
// once CLOCK has freed room. Exactly one caller sees each multiple; the
// others keep verifying with t meanwhile.
func (k *keyTables) maybeWiden(m *Member, t *p256.Table) {
	n := m.uses.Add(1) - KeyTablePromoteAfter
	if n <= 0 || n%k.widenAfter != 0 {
		return
	}
	wideSize := int64(p256.TableSize(p256.PinnedWindow))
	k.mu.Lock()
	fits := k.wide+wideSize <= k.limit/wideShare
	k.mu.Unlock()
	if !fits {
		return
	}
	wt, err := p256.NewTableWindow(m.ec, p256.PinnedWindow)
	if err != nil {
		k.buildErrors.Add(1)
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	// m may have been evicted, or the wide share filled, while the table
	// was built: then it is dropped.
	if m.tab.Load() != t || k.wide+wideSize > k.limit/wideShare {
		return
	}
	k.removeLocked(m, t)
	k.admitLocked(m, wt)
	k.widenings.Add(1)
}

// admit installs t on m and evicts until the tables fit the limit.
func (k *keyTables) admit(m *Member, t *p256.Table) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.admitLocked(m, t)
}

func (k *keyTables) admitLocked(m *Member, t *p256.Table) {
	size := int64(t.Size())
	for k.bytes+size > k.limit && len(k.ring) > 0 {
		k.evictOneLocked()
	}
	m.ref.Store(false)
	m.tab.Store(t)
	k.ring = append(k.ring, m)
	k.bytes += size
	if t.Window() == p256.PinnedWindow {
		k.wide += size
	}
	k.storeGaugesLocked()
}

// removeLocked takes m, which holds t, out of the ring without clearing
// its table pointer (a widening replaces it at once).
func (k *keyTables) removeLocked(m *Member, t *p256.Table) {
	for i, r := range k.ring {
		if r == m {
			k.dropLocked(i, t)
			return
		}
	}
}

// dropLocked removes ring slot i, whose member held t, and its bytes.
func (k *keyTables) dropLocked(i int, t *p256.Table) {
	size := int64(t.Size())
	k.bytes -= size
	if t.Window() == p256.PinnedWindow {
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
