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
// Invariant: bytes == Σ Size of the tables of members in ring, and
// bytes <= limit after every admission.
type keyTables struct {
	limit int64
	// stock: no tables at all, every verification through crypto/ecdsa
	// (Registry.DisableKeyTables, for measuring the stock bound).
	stock bool

	mu    sync.Mutex
	ring  []*Member // members holding a client table; guarded by mu
	hand  int       // next ring slot to inspect; guarded by mu
	bytes int64     // guarded by mu

	hits, misses, builds, evictions, buildErrors atomic.Uint64
	pinnedKeys, pinnedBytes                      atomic.Int64
	keys, curBytes                               atomic.Int64 // mirrors for lock-free snapshots
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
	// Evictions counts client-key tables dropped to stay within the byte
	// limit.
	Evictions uint64 `metric:"counter"`
	// Keys is the number of client keys holding a table.
	Keys int64 `metric:"gauge"`
	// Bytes is the memory of the client-key tables.
	Bytes int64 `metric:"gauge"`
	// LimitBytes is the configured bound on Bytes.
	LimitBytes int64 `metric:"gauge"`
	// PinnedKeys is the number of peer, orderer and admin keys holding a
	// table built at validation (outside the client bound).
	PinnedKeys int64 `metric:"gauge"`
	// PinnedBytes is the memory of the pinned tables.
	PinnedBytes int64 `metric:"gauge"`
}

func (m KeyTableMetrics) String() string {
	return fmt.Sprintf("key tables: %d hits, %d misses, %d builds, %d evictions; %d client keys in %d of %d bytes; %d pinned keys in %d bytes",
		m.Hits, m.Misses, m.Builds, m.Evictions, m.Keys, m.Bytes, m.LimitBytes, m.PinnedKeys, m.PinnedBytes)
}

func (k *keyTables) metrics() KeyTableMetrics {
	return KeyTableMetrics{
		Hits: k.hits.Load(), Misses: k.misses.Load(), Builds: k.builds.Load(), Evictions: k.evictions.Load(),
		Keys: k.keys.Load(), Bytes: k.curBytes.Load(), LimitBytes: k.limit,
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

// admit installs t on m and evicts until the tables fit the limit.
func (k *keyTables) admit(m *Member, t *p256.Table) {
	size := int64(t.Size())
	k.mu.Lock()
	defer k.mu.Unlock()
	for k.bytes+size > k.limit && len(k.ring) > 0 {
		k.evictOneLocked()
	}
	m.ref.Store(false)
	m.tab.Store(t)
	k.ring = append(k.ring, m)
	k.bytes += size
	k.keys.Store(int64(len(k.ring)))
	k.curBytes.Store(k.bytes)
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
		k.bytes -= int64(t.Size())
		last := len(k.ring) - 1
		k.ring[k.hand] = k.ring[last]
		k.ring[last] = nil
		k.ring = k.ring[:last]
		k.evictions.Add(1)
		return
	}
}
