package identity

import (
	"errors"
	"sync"
	"testing"

	"github.com/strand-ledger/strand/identity/p256"
	"github.com/strand-ledger/strand/identity/zip215"
)

// algorithms runs a key-table test for each signature algorithm: the
// machinery is shared, the tables differ.
var algorithms = []Algorithm{ECDSAP256, Ed25519}

// caFor is the fixture's CA whose members sign with alg.
func (f *fixture) caFor(alg Algorithm) *CA {
	if alg == Ed25519 {
		return f.caEd
	}
	return f.ca1
}

// widths are alg's default and pinned table widths and their sizes.
func widths(alg Algorithm) (narrow, wide int, narrowSize, wideSize int64) {
	if alg == Ed25519 {
		return zip215.Window, zip215.PinnedWindow, int64(zip215.TableSize(zip215.Window)), int64(zip215.TableSize(zip215.PinnedWindow))
	}
	return p256.Window, p256.PinnedWindow, int64(p256.TableSize(p256.Window)), int64(p256.TableSize(p256.PinnedWindow))
}

// TestKeyTablesPromoteAndEvict checks that a client key gets a table after
// KeyTablePromoteAfter verifications, that the client tables stay within
// the byte limit by evicting, that peers get theirs at validation, and that
// answers never change along the way.
func TestKeyTablesPromoteAndEvict(t *testing.T) {
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) { testKeyTablesPromoteAndEvict(t, alg) })
	}
}

func testKeyTablesPromoteAndEvict(t *testing.T, alg Algorithm) {
	f := newFixture(t)
	ca := f.caFor(alg)
	_, pinned, narrowSize, _ := widths(alg)
	peer := mustIssue(t, ca, "peer0", RolePeer, alg)
	mp, err := f.reg.Member(peer.Identity())
	if err != nil {
		t.Fatal(err)
	}
	if mp.tab.Load() != nil {
		t.Fatal("peer member has a table after validation alone; want it built at its first check (a TLS identity never verifies)")
	}
	msg := []byte("a block header")
	sig, err := peer.Sign(msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := mp.Verify(msg, sig); err != nil {
		t.Fatal(err)
	}
	if mp.tab.Load() == nil {
		t.Fatal("peer member has no table after its first check")
	}
	if err := mp.Verify(msg, sig); err != nil {
		t.Fatalf("with its table: %v", err)
	}
	if w := mp.tab.Load().Window(); w != pinned {
		t.Fatalf("peer member's table is %d bits wide, expected %d", w, pinned)
	}
	const clients = 3
	// Room for two client tables: the third admission must evict one.
	f.reg.SetKeyTableLimit(2*narrowSize + 1)

	msg = []byte("tx")
	var members []*Member
	for i := 0; i < clients; i++ {
		s := mustIssue(t, ca, "user"+string(rune('a'+i)), RoleClient, alg)
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

// TestKeyTablesConcurrent verifies from many goroutines while tables are
// built and evicted (run with -race).
func TestKeyTablesConcurrent(t *testing.T) {
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) { testKeyTablesConcurrent(t, alg) })
	}
}

func testKeyTablesConcurrent(t *testing.T, alg Algorithm) {
	f := newFixture(t)
	_, _, narrowSize, _ := widths(alg)
	msg := []byte("tx")
	type cl struct {
		m   *Member
		sig []byte
	}
	var cls []cl
	for i := 0; i < 4; i++ {
		s := mustIssue(t, f.caFor(alg), "c"+string(rune('a'+i)), RoleClient, alg)
		m, _ := f.reg.Member(s.Identity())
		sig, _ := s.Sign(msg)
		cls = append(cls, cl{m, sig})
	}
	f.reg.SetKeyTableLimit(narrowSize + 1) // one at a time
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
	for _, c := range []struct {
		role Role
		alg  Algorithm
	}{{RolePeer, ECDSAP256}, {RoleClient, ECDSAP256}, {RolePeer, Ed25519}, {RoleClient, Ed25519}} {
		role := c.role
		s := mustIssue(t, f.caFor(c.alg), "stock-"+role.String(), role, c.alg)
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
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) { testKeyTablesWiden(t, alg) })
	}
}

func testKeyTablesWiden(t *testing.T, alg Algorithm) {
	f := newFixture(t)
	f.reg.keys.widenAfter = 6
	narrowW, wideW, narrow, wide := widths(alg)
	// The wide share (half) holds one wide table, not two.
	f.reg.SetKeyTableLimit(2*wide + 2*narrow)

	msg := []byte("tx")
	type cl struct {
		m        *Member
		sig, bad []byte
	}
	newClient := func(name string) cl {
		s := mustIssue(t, f.caFor(alg), name, RoleClient, alg)
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
				bytes += tab.size
				if tab.wide != (tab.Window() == wideW) {
					t.Fatalf("%s: a %d-bit table marked wide %v", when, tab.Window(), tab.wide)
				}
				if tab.wide {
					wideBytes += tab.size
				}
			}
		}
		if km.Bytes != bytes || km.WideBytes != wideBytes || km.Bytes > km.LimitBytes || 2*km.WideBytes > km.LimitBytes {
			t.Fatalf("%s: %v; the members hold %d bytes, %d wide", when, km, bytes, wideBytes)
		}
	}

	a, b := newClient("hot-a"), newClient("hot-b")
	use(a, KeyTablePromoteAfter) // promoted, then hits
	if width(a) != narrowW {
		t.Fatalf("after promotion: width %d, expected %d", width(a), narrowW)
	}
	use(a, 4)
	if width(a) != wideW {
		t.Fatalf("after %d hits: width %d, expected %d", 8, width(a), wideW)
	}
	use(b, KeyTablePromoteAfter+8)
	if width(b) != narrowW {
		t.Fatalf("second hot key widened past the wide share: width %d", width(b))
	}
	checkGauges("a wide, b narrow", a, b)
	if km := f.reg.KeyTableMetrics(); km.Widenings != 1 {
		t.Fatalf("%v: expected 1 widening", km)
	}

	// Cold keys need room: CLOCK evicts, and a, unused meanwhile, loses
	// its wide table; then b widens at its next multiple of widenAfter.
	members := []cl{a, b}
	for i := 0; width(a) == wideW; i++ {
		if i == 16 {
			t.Fatalf("%v: a's wide table survived 16 new keys", f.reg.KeyTableMetrics())
		}
		c := newClient("cold-" + string(rune('a'+i)))
		use(c, KeyTablePromoteAfter)
		members = append(members, c)
		checkGauges("cold keys", members...)
	}
	if width(b) == narrowW { // b may have been evicted too
		use(b, 3)
	}
	if width(b) == 0 {
		use(b, KeyTablePromoteAfter/2)
	}
	for i := 0; width(b) != wideW; i++ {
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
