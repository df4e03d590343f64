package identity

import (
	"errors"
	"sync"
	"testing"

	"github.com/strand-ledger/strand/identity/p256"
)

// TestKeyTablesPromoteAndEvict checks that a client key gets a table after
// KeyTablePromoteAfter verifications, that the client tables stay within
// the byte limit by evicting, that peers get theirs at validation, and that
// answers never change along the way.
func TestKeyTablesPromoteAndEvict(t *testing.T) {
	f := newFixture(t)
	peer := mustIssue(t, f.ca1, "peer0", RolePeer, ECDSAP256)
	mp, err := f.reg.Member(peer.Identity())
	if err != nil {
		t.Fatal(err)
	}
	if mp.tab.Load() == nil {
		t.Fatal("peer member has no table after validation")
	}
	if w := mp.tab.Load().Window(); w != p256.PinnedWindow {
		t.Fatalf("peer member's table is %d bits wide, expected %d", w, p256.PinnedWindow)
	}
	const clients = 3
	probe := mustIssue(t, f.ca1, "probe", RoleClient, ECDSAP256)
	pm, _ := f.reg.Member(probe.Identity())
	// Room for two client tables: the third admission must evict one.
	f.reg.SetKeyTableLimit(int64(2*mustTableSize(t, pm)) + 1)

	msg := []byte("tx")
	var members []*Member
	for i := 0; i < clients; i++ {
		s := mustIssue(t, f.ca1, "user"+string(rune('a'+i)), RoleClient, ECDSAP256)
		m, err := f.reg.Member(s.Identity())
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := s.Sign(msg)
		bad := append([]byte(nil), sig...)
		bad[len(bad)-1] ^= 1
		check := func(when string) {
			t.Helper()
			if err := m.Verify(msg, sig); err != nil {
				t.Fatalf("client %d, %s: %v", i, when, err)
			}
			if err := m.Verify(msg, bad); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("client %d, %s, corrupted signature: %v, expected ErrBadSignature", i, when, err)
			}
		}
		for j := 0; j < KeyTablePromoteAfter; j += 2 { // two uses per check
			if m.tab.Load() != nil {
				t.Fatalf("client %d has a table after %d verifications", i, j)
			}
			check("without a table")
		}
		if m.tab.Load() == nil {
			t.Fatalf("client %d has no table after %d verifications", i, KeyTablePromoteAfter)
		}
		check("with a table")
		members = append(members, m)
	}
	km := f.reg.KeyTableMetrics()
	t.Log(km)
	if km.Keys != 2 || km.Bytes > km.LimitBytes || km.Evictions != 1 || km.Builds != clients {
		t.Fatalf("%v: expected 2 client keys within the limit, 1 eviction, %d builds", km, clients)
	}
	if km.Hits == 0 || km.Misses == 0 || km.PinnedKeys < 1 {
		t.Fatalf("%v: expected hits, misses and a pinned key", km)
	}
	held := 0
	for _, m := range members {
		if m.tab.Load() != nil {
			held++
		}
	}
	if held != 2 {
		t.Fatalf("%d members hold tables, metrics say 2", held)
	}
}

// mustTableSize is the size of a client key's table (the default width).
func mustTableSize(t *testing.T, m *Member) int {
	t.Helper()
	tab, err := p256.NewTable(m.ec)
	if err != nil {
		t.Fatal(err)
	}
	return tab.Size()
}

// TestKeyTablesConcurrent verifies from many goroutines while tables are
// built and evicted (run with -race).
func TestKeyTablesConcurrent(t *testing.T) {
	f := newFixture(t)
	msg := []byte("tx")
	type cl struct {
		m   *Member
		sig []byte
	}
	var cls []cl
	for i := 0; i < 4; i++ {
		s := mustIssue(t, f.ca1, "c"+string(rune('a'+i)), RoleClient, ECDSAP256)
		m, _ := f.reg.Member(s.Identity())
		sig, _ := s.Sign(msg)
		cls = append(cls, cl{m, sig})
	}
	f.reg.SetKeyTableLimit(int64(mustTableSize(t, cls[0].m)) + 1) // one at a time
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				c := cls[(g+i)%len(cls)]
				if err := c.m.Verify(msg, c.sig); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if km := f.reg.KeyTableMetrics(); km.Bytes > km.LimitBytes || km.Keys > 1 {
		t.Fatalf("%v: over the limit", km)
	}
}

// TestDisableKeyTables checks that a registry with tables disabled builds
// none, for peers or clients, and still gives the same answers: it is the
// stock path the benchmarks print beside the nodes' own.
func TestDisableKeyTables(t *testing.T) {
	f := newFixture(t)
	f.reg.DisableKeyTables()
	msg := []byte("tx")
	for _, role := range []Role{RolePeer, RoleClient} {
		s := mustIssue(t, f.ca1, "stock-"+role.String(), role, ECDSAP256)
		m, err := f.reg.Member(s.Identity())
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := s.Sign(msg)
		bad := append([]byte(nil), sig...)
		bad[len(bad)-1] ^= 1
		for i := 0; i < 3*KeyTablePromoteAfter; i++ {
			if err := m.Verify(msg, sig); err != nil {
				t.Fatalf("%s, verification %d: %v", role, i, err)
			}
			if err := m.Verify(msg, bad); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("%s, verification %d of a corrupted signature: %v, expected ErrBadSignature", role, i, err)
			}
		}
		if m.tab.Load() != nil {
			t.Fatalf("%s member holds a table with tables disabled", role)
		}
	}
	if km := f.reg.KeyTableMetrics(); km.Builds != 0 || km.PinnedKeys != 0 || km.Keys != 0 || km.Hits != 0 {
		t.Fatalf("%v: expected no tables with tables disabled", km)
	}
}

// TestKeyTablesWiden checks that a client key's table is rebuilt at the
// pinned width after widenAfter hits, that wide tables never hold more
// than half the limit (a second hot key stays narrow while the first
// holds the wide share, and widens once CLOCK evicts it), that the byte
// gauges match the tables members hold, and that answers never change.
func TestKeyTablesWiden(t *testing.T) {
	f := newFixture(t)
	f.reg.keys.widenAfter = 6
	narrow, wide := int64(p256.TableSize(p256.Window)), int64(p256.TableSize(p256.PinnedWindow))
	// The wide share (half) holds one wide table, not two.
	f.reg.SetKeyTableLimit(2*wide + 2*narrow)

	msg := []byte("tx")
	type cl struct {
		m        *Member
		sig, bad []byte
	}
	newClient := func(name string) cl {
		s := mustIssue(t, f.ca1, name, RoleClient, ECDSAP256)
		m, err := f.reg.Member(s.Identity())
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := s.Sign(msg)
		bad := append([]byte(nil), sig...)
		bad[len(bad)-1] ^= 1
		return cl{m, sig, bad}
	}
	// use verifies n good and n corrupted signatures of c.
	use := func(c cl, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if err := c.m.Verify(msg, c.sig); err != nil {
				t.Fatalf("%s: %v", c.m.Name, err)
			}
			if err := c.m.Verify(msg, c.bad); !errors.Is(err, ErrBadSignature) {
				t.Fatalf("%s, corrupted signature: %v, expected ErrBadSignature", c.m.Name, err)
			}
		}
	}
	width := func(c cl) int {
		if tab := c.m.tab.Load(); tab != nil {
			return tab.Window()
		}
		return 0
	}
	checkGauges := func(when string, members ...cl) {
		t.Helper()
		km := f.reg.KeyTableMetrics()
		var bytes, wideBytes int64
		for _, c := range members {
			if tab := c.m.tab.Load(); tab != nil {
				bytes += int64(tab.Size())
				if tab.Window() == p256.PinnedWindow {
					wideBytes += int64(tab.Size())
				}
			}
		}
		if km.Bytes != bytes || km.WideBytes != wideBytes || km.Bytes > km.LimitBytes || 2*km.WideBytes > km.LimitBytes {
			t.Fatalf("%s: %v; the members hold %d bytes, %d wide", when, km, bytes, wideBytes)
		}
	}

	a, b := newClient("hot-a"), newClient("hot-b")
	use(a, KeyTablePromoteAfter) // promoted, then hits
	if width(a) != p256.Window {
		t.Fatalf("after promotion: width %d, expected %d", width(a), p256.Window)
	}
	use(a, 4)
	if width(a) != p256.PinnedWindow {
		t.Fatalf("after %d hits: width %d, expected %d", 8, width(a), p256.PinnedWindow)
	}
	use(b, KeyTablePromoteAfter+8)
	if width(b) != p256.Window {
		t.Fatalf("second hot key widened past the wide share: width %d", width(b))
	}
	checkGauges("a wide, b narrow", a, b)
	if km := f.reg.KeyTableMetrics(); km.Widenings != 1 {
		t.Fatalf("%v: expected 1 widening", km)
	}

	// Cold keys need room: CLOCK evicts, and a, unused meanwhile, loses
	// its wide table; then b widens at its next multiple of widenAfter.
	members := []cl{a, b}
	for i := 0; width(a) == p256.PinnedWindow; i++ {
		if i == 16 {
			t.Fatalf("%v: a's wide table survived 16 new keys", f.reg.KeyTableMetrics())
		}
		c := newClient("cold-" + string(rune('a'+i)))
		use(c, KeyTablePromoteAfter)
		members = append(members, c)
		checkGauges("cold keys", members...)
	}
	if width(b) == p256.Window { // b may have been evicted too
		use(b, 3)
	}
	if width(b) == 0 {
		use(b, KeyTablePromoteAfter/2)
	}
	for i := 0; width(b) != p256.PinnedWindow; i++ {
		if i == 6 {
			t.Fatalf("%v: b still %d bits wide with the wide share free", f.reg.KeyTableMetrics(), width(b))
		}
		use(b, 1)
	}
	checkGauges("b wide", members...)
	if km := f.reg.KeyTableMetrics(); km.Widenings != 2 || km.Evictions == 0 {
		t.Fatalf("%v: expected 2 widenings and evictions", km)
	}
	t.Log(f.reg.KeyTableMetrics())
}
