package orderer

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/orderer/cut"
)

// TestCheckMembers: the orderer's door for membership updates refuses a
// stale sequence, too few admin signatures and a CRL not signed by the
// org's CA, each by name, and its lists then refuse the revoked creator.
func TestCheckMembers(t *testing.T) {
	ca1, _ := identity.NewCA("Org1", identity.ECDSAP256)
	ca2, _ := identity.NewCA("Org2", identity.ECDSAP256)
	reg, err := identity.NewRegistry([]identity.Org{{ID: "Org1", CACerts: [][]byte{ca1.CertDER()}}, {ID: "Org2", CACerts: [][]byte{ca2.CertDER()}}})
	if err != nil {
		t.Fatal(err)
	}
	a1, _ := ca1.Issue("admin1", identity.RoleAdmin, identity.ECDSAP256)
	a2, _ := ca2.Issue("admin2", identity.RoleAdmin, identity.ECDSAP256)
	c1, _ := ca1.Issue("client1", identity.RoleClient, identity.ECDSAP256)
	m1, err := reg.Member(c1.Identity())
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := new(big.Int).SetString(m1.Serial(), 16)
	crl := func(ca *identity.CA) []byte {
		der, err := ca.RevokeCRL(nil, []*big.Int{serial}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	update := func(seq uint64, der []byte, signers ...api.Signer) []byte {
		u, _ := api.EncodeMembersUpdate(&api.MembersUpdate{Channel: "ch", Sequence: seq, CRLs: []api.MembersCRL{{Org: "Org1", CRL: der}}})
		env, err := api.SignConfigUpdate(u, signers...)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := api.EncodeMembers(env)
		return raw
	}
	for _, c := range []struct {
		name string
		raw  []byte
		want error
		text string
	}{
		{"stale sequence", update(1, crl(ca1), a1, a2), ErrStaleMembers, "want sequence 0"},
		{"too few signatures", update(0, crl(ca1), a1), identity.ErrNoMajority, "1 of the channel's 2 orgs"},
		{"CRL not signed by the org's CA", update(0, crl(ca2), a1, a2), identity.ErrBadCRL, `not signed by a CA of org "Org1"`},
		{"another channel", func() []byte {
			u, _ := api.EncodeMembersUpdate(&api.MembersUpdate{Channel: "other", CRLs: []api.MembersCRL{{Org: "Org1", CRL: crl(ca1)}}})
			env, _ := api.SignConfigUpdate(u, a1, a2)
			raw, _ := api.EncodeMembers(env)
			return raw
		}(), ErrConfigUpdate, `for channel "other"`},
		{"malformed", []byte(api.MembersMagic + "{"), api.ErrBadConfigUpdate, "membership envelope"},
	} {
		_, _, err := checkMembers(reg, "ch", nil, c.raw)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.want, c.text)
		}
	}
	rv, _, err := checkMembers(reg, "ch", nil, update(0, crl(ca1), a1, a2))
	if err != nil {
		t.Fatal(err)
	}
	if err := rv.Check(m1); !errors.Is(err, identity.ErrRevoked) || !strings.Contains(err.Error(), "client1") {
		t.Fatalf("client1 under the new lists: %v", err)
	}
	if _, _, err := checkMembers(reg, "ch", rv, update(0, crl(ca1), a1, a2)); !errors.Is(err, ErrStaleMembers) {
		t.Errorf("the same sequence again: %v, want ErrStaleMembers", err)
	}
}

// TestMembersHeldBack: an orderer whose block holding a membership update
// is damaged still starts, applies nothing from that block on (the updates
// apply in order), and applies it once the block is replaced, as
// repairDamaged does. Before the watermark such an orderer refused to
// start.
func TestMembersHeldBack(t *testing.T) {
	n := newTestNet(t)
	a2, err := n.org2CA.Issue("admin2", identity.RoleAdmin, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := n.reg.Member(n.client1.Identity())
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := new(big.Int).SetString(m1.Serial(), 16)
	der, err := n.org1CA.RevokeCRL(nil, []*big.Int{serial}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	u, _ := api.EncodeMembersUpdate(&api.MembersUpdate{Channel: testChannel, CRLs: []api.MembersCRL{{Org: "Org1", CRL: der}}})
	env, err := api.SignConfigUpdate(u, n.admin1, a2)
	if err != nil {
		t.Fatal(err)
	}
	update, _ := api.EncodeMembers(env)

	// A fresh registry per orderer start: the lists live in the registry.
	freshReg := func() *identity.Registry {
		r, err := identity.NewRegistry([]identity.Org{
			{ID: "Org1", CACerts: [][]byte{n.org1CA.CertDER()}},
			{ID: "Org2", CACerts: [][]byte{n.org2CA.CertDER()}},
			{ID: "OrdererOrg", CACerts: [][]byte{n.ordererCA.CertDER()}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	dir := t.TempDir()
	start := func() (*Orderer, *ledger.BlockStore) {
		t.Helper()
		store := openStore(t, dir)
		cfg := n.config(store, cut.Config{MaxTxs: 1, Timeout: time.Millisecond})
		cfg.Registry = freshReg()
		o, err := New(cfg)
		if err != nil {
			t.Fatalf("starting the orderer: %v", err)
		}
		return o, store
	}
	stop := func(o *Orderer, store *ledger.BlockStore) {
		t.Helper()
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		store.Close()
	}

	o, store := start()
	tx1, _ := n.tx(t, "a")
	// A block after the update's (a damaged last block would be a torn
	// tail, cut), by a client the update does not revoke.
	tx2, _ := n.txFor(t, testChannel, n.client2, "b")
	h0 := store.Height()
	for _, raw := range [][]byte{tx1, update, tx2} {
		if err := o.Submit(context.Background(), raw); err != nil {
			t.Fatal(err)
		}
	}
	bs := blocks(t, o, h0, 3)
	if s := o.cfg.Registry.Revocations().Sequence(); s != 1 {
		t.Fatalf("after the update: sequence %d, want 1", s)
	}
	sound := bs[1] // the update's block
	stop(o, store)

	// Flip a byte of the update inside its block, on disk.
	seg := filepath.Join(dir, "blocks", "000000.seg")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, update)
	if at < 0 {
		t.Fatalf("the update is not in %s", seg)
	}
	off := at + len(update)/2
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{data[off] ^ 0x40}, int64(off)); err != nil {
		t.Fatal(err)
	}
	f.Close()

	o, store = start()
	defer stop(o, store)
	if d := store.Damaged(); len(d) != 1 {
		t.Fatalf("damaged blocks %v, want the update's", d)
	}
	if s := o.cfg.Registry.Revocations().Sequence(); s != 0 {
		t.Fatalf("with the update's block damaged: sequence %d, want 0 (held back)", s)
	}
	num := sound.GetHeader().GetNumber()
	raw, err := proto.Marshal(sound)
	if err != nil {
		t.Fatal(err)
	}
	e, err := o.checkFetchedAt(raw, num, o.hashAt(num-1))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Replace(e); err != nil {
		t.Fatal(err)
	}
	o.catchUpMembers() // what repairDamaged does once every block is replaced
	if s := o.cfg.Registry.Revocations().Sequence(); s != 1 {
		t.Fatalf("after the repair: sequence %d, want 1", s)
	}
	if err := o.cfg.Registry.Revocations().Check(m1); !errors.Is(err, identity.ErrRevoked) {
		t.Fatalf("client1 after the repair: %v, want ErrRevoked", err)
	}
}

// TestRaftForwardsMembers: a membership update submitted at a follower is
// forwarded to the leader and ordered (the leader once decoded it as a
// transaction and refused it: `strand channel revoke` failed on a
// three-orderer network whenever it reached a follower first).
func TestRaftForwardsMembers(t *testing.T) {
	cl := newCluster(t, 3, raftBlock, nil)
	lead := cl.leader()
	follower := (lead + 1) % 3
	a2, err := cl.n.org2CA.Issue("admin2", identity.RoleAdmin, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := cl.n.reg.Member(cl.n.client1.Identity())
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := new(big.Int).SetString(m1.Serial(), 16)
	der, err := cl.n.org1CA.RevokeCRL(nil, []*big.Int{serial}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	u, _ := api.EncodeMembersUpdate(&api.MembersUpdate{Channel: testChannel, CRLs: []api.MembersCRL{{Org: "Org1", CRL: der}}})
	env, err := api.SignConfigUpdate(u, cl.n.admin1, a2)
	if err != nil {
		t.Fatal(err)
	}
	update, _ := api.EncodeMembers(env)
	cl.submit(follower, update)
	for _, i := range []int{lead, follower} {
		blks := cl.waitTxs(i, 1)
		if got := blks[len(blks)-1].Transactions[0]; !bytes.Equal(got, update) {
			t.Fatalf("orderer %d stored %d bytes, want the membership update", cl.members[i].id, len(got))
		}
	}
}

// TestOrdererOrgMembers: the orderer admits an added org's client from
// the block that adds it and refuses a removed org's from the block that
// removes it, by name; the admission of the updates themselves counts the
// admins of the orgs that stay; a restart reads the membership back from
// the chain.
func TestOrdererOrgMembers(t *testing.T) {
	n := newTestNet(t)
	a2, _ := n.org2CA.Issue("admin2", identity.RoleAdmin, identity.ECDSAP256)
	ca4, _ := identity.NewCA("Org4", identity.ECDSAP256)
	a4, _ := ca4.Issue("admin4", identity.RoleAdmin, identity.ECDSAP256)
	c4, _ := ca4.Issue("client4", identity.RoleClient, identity.ECDSAP256)
	update := func(seq uint64, add []api.MembersOrg, remove []string, signers ...api.Signer) []byte {
		u, _ := api.EncodeMembersUpdate(&api.MembersUpdate{Channel: testChannel, Sequence: seq, Add: add, Remove: remove})
		env, err := api.SignConfigUpdate(u, signers...)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := api.EncodeMembers(env)
		return raw
	}
	dir := t.TempDir()
	start := func() (*Orderer, *ledger.BlockStore) {
		t.Helper()
		store := openStore(t, dir)
		cfg := n.config(store, cut.Config{MaxTxs: 1, Timeout: time.Millisecond})
		reg, err := identity.NewRegistry([]identity.Org{
			{ID: "Org1", CACerts: [][]byte{n.org1CA.CertDER()}},
			{ID: "Org2", CACerts: [][]byte{n.org2CA.CertDER()}},
			{ID: "OrdererOrg", CACerts: [][]byte{n.ordererCA.CertDER()}},
		})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Registry = reg
		o, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return o, store
	}
	o, store := start()
	ctx := context.Background()
	submit := func(raw []byte) error {
		h := store.Height()
		err := o.Submit(ctx, raw)
		if err == nil {
			blocks(t, o, h, 1)
		}
		return err
	}
	tx4 := func() []byte { raw, _ := n.txFor(t, testChannel, c4, "k4"); return raw }
	if err := submit(tx4()); !errors.Is(err, ErrForbidden) || !errors.Is(err, identity.ErrUnknownOrg) {
		t.Fatalf("Org4's client before the add: %v, want ErrForbidden, ErrUnknownOrg", err)
	}
	add := []api.MembersOrg{{ID: "Org4", CACerts: [][]byte{ca4.CertDER()}, TLSCACerts: [][]byte{ca4.CertDER()}}}
	if err := submit(update(0, add, nil, n.admin1, a4)); !errors.Is(err, identity.ErrNoMajority) {
		t.Fatalf("Org4 signing its own admission: %v, want ErrNoMajority", err)
	}
	if err := submit(update(0, add, nil, n.admin1, a2)); err != nil {
		t.Fatal(err)
	}
	if err := submit(tx4()); err != nil {
		t.Fatalf("Org4's client after the add: %v", err)
	}
	if err := submit(update(1, nil, []string{"Org2"}, n.admin1, a2)); !errors.Is(err, identity.ErrNoMajority) || !strings.Contains(err.Error(), "being removed") {
		t.Fatalf("Org2 signing its own removal: %v, want ErrNoMajority", err)
	}
	if err := submit(update(1, nil, []string{"Org2"}, n.admin1, a4)); err != nil {
		t.Fatal(err)
	}
	tx2 := func() []byte { raw, _ := n.txFor(t, testChannel, n.client2, "k2"); return raw }
	if err := submit(tx2()); !errors.Is(err, ErrForbidden) || !errors.Is(err, identity.ErrOrgRemoved) {
		t.Fatalf("Org2's client after the removal: %v, want ErrForbidden, ErrOrgRemoved", err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	store.Close()
	o, store = start()
	defer func() { o.Close(); store.Close() }()
	if err := o.Submit(ctx, tx2()); !errors.Is(err, identity.ErrOrgRemoved) {
		t.Fatalf("Org2's client after a restart: %v, want ErrOrgRemoved", err)
	}
	if err := submit(tx4()); err != nil {
		t.Fatalf("Org4's client after a restart: %v", err)
	}
}
