package orderer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
	"github.com/strand-ledger/strand/orderer/cut"
	"github.com/strand-ledger/strand/policy"
)

// configUpdate builds a signed config envelope for channel ch1 that sets
// the orderer set to peers at sequence seq.
func (c *cluster) configUpdate(seq uint64, peers []RaftPeer, signers ...api.Signer) []byte {
	c.t.Helper()
	u := &api.ConfigUpdate{Channel: testChannel, Sequence: seq}
	for _, p := range peers {
		u.Orderers = append(u.Orderers, api.ConfigOrderer{ID: p.ID, Org: p.Org, Name: p.Name, Address: p.Address})
	}
	raw, err := api.EncodeConfigUpdate(u)
	if err != nil {
		c.t.Fatal(err)
	}
	env, err := api.SignConfigUpdate(raw, signers...)
	if err != nil {
		c.t.Fatal(err)
	}
	out, err := env.Encode()
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// waitConfig waits until every running member has applied seq config
// updates.
func (c *cluster) waitConfig(seq uint64) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, m := range c.members {
		for m.o != nil && m.o.raft.confView.Load().Seq < seq {
			if time.Now().After(deadline) {
				c.t.Fatalf("orderer %d has applied %d config updates, want %d within 10 s:\n%s", m.id, m.o.raft.confView.Load().Seq, seq, m.logs)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// chainIDs returns the tx ids of a chain's ordinary transactions and
// the number of config blocks.
func chainIDs(t testing.TB, blks []*api.Block) (ids []string, configs int) {
	t.Helper()
	for _, b := range blks {
		for _, raw := range b.Transactions {
			if api.IsConfigEnvelope(raw) {
				if len(b.Transactions) != 1 {
					t.Fatalf("block %d holds a config update among %d transactions, want it alone", b.Header.Number, len(b.Transactions))
				}
				configs++
				continue
			}
			tx, _, err := api.DecodeTx(raw)
			if err != nil {
				t.Fatalf("block %d holds an undecodable tx: %v", b.Header.Number, err)
			}
			ids = append(ids, tx.ID())
		}
	}
	return ids, configs
}

// checkMembers waits until every running member holds every transaction
// of want once and configs config blocks, and all hold the same chain.
func (c *cluster) checkMembers(want map[string]bool, configs int) {
	c.t.Helper()
	var ref []*api.Block
	for _, m := range c.members {
		if m.o == nil {
			continue
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			blks := stored(c.t, m.store)
			ids, n := chainIDs(c.t, blks)
			if len(ids) == len(want) && n == configs {
				once(c.t, ids, want)
				if ref == nil {
					checkChain(c.t, c.n.reg, nil, blks)
					ref = blks
				} else {
					sameChain(c.t, c.n.reg, ref, blks, fmt.Sprintf("orderer %d", m.id))
				}
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("orderer %d holds %d txs and %d config blocks, want %d and %d\nmetrics: %v\nlog:\n%s",
					m.id, len(ids), n, len(want), configs, m.o.Metrics(), m.logs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// logLines returns the running members' log lines that contain any of
// the words, for failure messages.
func (c *cluster) logLines(words ...string) string {
	var b strings.Builder
	for _, m := range c.members {
		for _, l := range strings.Split(m.logs.String(), "\n") {
			for _, w := range words {
				if strings.Contains(l, w) {
					fmt.Fprintf(&b, "orderer %d: %s\n", m.id, l)
					break
				}
			}
		}
	}
	return b.String()
}

// TestRaftConfigUpdateAddsAndRemovesOrderers: under load, a config
// update signed by the admins of two of the channel's three orgs adds a
// fourth orderer to a three-orderer cluster; the new orderer joins (from
// a snapshot: the log is compacted every few entries) and orders with the
// others. Then an update removes a follower, which stops ordering. Every
// running member ends with the same chain, config blocks included, and
// every transaction once. Updates that miss the policy, replay a
// sequence or change two orderers are refused. Block and stream mode.
func TestRaftConfigUpdateAddsAndRemovesOrderers(t *testing.T) {
	for _, c := range []struct {
		name  string
		batch cut.Config
	}{{"block", raftBlock}, {"stream", cut.Config{Mode: cut.ModeStream, MaxTxs: 50}}} {
		t.Run(c.name, func(t *testing.T) { testConfigUpdates(t, c.batch) })
	}
}

func testConfigUpdates(t *testing.T, batch cut.Config) {
	cl := newCluster(t, 3, batch, func(rc *RaftConfig) { rc.SnapshotEntries, rc.KeepEntries = 20, 5 })
	cl.leader()
	ordAdmin, err := cl.n.ordererCA.Issue("admin", identity.RoleAdmin, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	wait := cl.load(stop, 0, 1, 2)
	time.Sleep(300 * time.Millisecond)

	m4 := cl.newMember()
	four := append(slices.Clone(cl.peers), RaftPeer{ID: m4.id, Org: "OrdererOrg", Name: m4.name, Address: m4.addr})
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"one org's admin", cl.configUpdate(0, four, ordAdmin), "signed by the admins of 1 of the channel's 3 orgs"},
		{"a client's signature", cl.configUpdate(0, four, ordAdmin, cl.n.client1), "has role client, want admin"},
		{"a later sequence", cl.configUpdate(1, four, ordAdmin, cl.n.admin1), "has sequence 1"},
		{"two orderers changed", cl.configUpdate(0, append(slices.Clone(four), RaftPeer{ID: 9, Org: "OrdererOrg", Name: "o9", Address: "127.0.0.1:1"}),
			ordAdmin, cl.n.admin1), "adds 2 and removes 0"},
	} {
		err := cl.members[1].o.Submit(t.Context(), c.raw)
		if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrForbidden naming %q", c.name, err, c.want)
		}
	}

	add := cl.configUpdate(0, four, ordAdmin, cl.n.admin1)
	start := time.Now()
	cl.submit(1, add) // at a follower or the leader: forwarded as any tx
	cl.waitConfig(1)
	t.Logf("config update 1 (add orderer 4) applied on the three members %s after submission", time.Since(start).Round(time.Millisecond))
	if err := cl.members[0].o.Submit(t.Context(), add); !errors.Is(err, ErrForbidden) {
		t.Errorf("a replayed config update: %v, want ErrForbidden", err)
	}
	m4.join = four
	cl.start(3)
	cl.waitConfig(1)
	time.Sleep(500 * time.Millisecond) // the load goes on with four members

	// Remove a follower.
	lead := cl.leader()
	gone := (lead + 1) % 3
	var three []RaftPeer
	for _, p := range four {
		if p.ID != uint64(gone+1) {
			three = append(three, p)
		}
	}
	cl.submit(lead, cl.configUpdate(1, three, ordAdmin, cl.n.admin1))
	deadline := time.Now().Add(10 * time.Second)
	probes := map[string]bool{}
	for {
		probe, id := cl.n.tx(t, "probe")
		err := cl.members[gone].o.Submit(t.Context(), probe)
		if err == nil {
			probes[id] = true // ordered like any tx
		}
		if errors.Is(err, ErrRemoved) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orderer %d still admits after its removal: %v\n%s", gone+1, err, cl.logLines("config", "catch-up", "snapshot", "refused", "leader changed"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	want := wait()
	for id := range probes {
		want[id] = true
	}
	removed := cl.members[gone]
	removedBlocks := stored(t, removed.store)
	cl.stop(gone, false)
	cl.waitConfig(2)
	// And the three go on without it.
	for id := range cl.submitN(20, "after", 3, lead) {
		want[id] = true
	}
	cl.checkMembers(want, 2)
	ref := stored(t, cl.members[lead].store)
	if len(removedBlocks) > len(ref) {
		t.Fatalf("the removed orderer holds %d blocks, the others %d", len(removedBlocks), len(ref))
	}
	sameChain(t, cl.n.reg, ref[:len(removedBlocks)], removedBlocks, "the removed orderer")
	if _, n := chainIDs(t, removedBlocks); n < 1 {
		t.Errorf("the removed orderer stored %d config blocks, want the first (and the one that removed it, if it learnt the commit)", n)
	}
	// A peer commits the chain, config blocks included.
	peerStore := openStore(t, t.TempDir())
	defer peerStore.Close()
	p, err := committer.New(committer.Channel{
		Name: testChannel, Registry: cl.n.reg, OrdererOrgs: []string{"OrdererOrg"},
		Policies: map[string]*policy.Policy{testContract: policy.MustParse("AND('Org1.peer','Org2.peer')")},
	}, peerStore, memdb.New(), committer.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for n := range cl.members[lead].store.Height() {
		raw, err := cl.members[lead].store.RawBlock(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Deliver(raw); err != nil {
			t.Fatalf("the peer refused block %d: %v", n, err)
		}
	}
	if err := p.Sync(); err != nil || p.Height() != uint64(len(ref)) {
		t.Fatalf("the peer committed %d of %d blocks: %v", p.Height(), len(ref), err)
	}
	for n := range peerStore.Height() {
		if b, err := peerStore.Block(n); err == nil && n > 0 && api.IsConfigEnvelope(b.Transactions[0]) {
			if code := b.Metadata.ValidationCodes[0]; code != byte(api.TxValidationCode_VALID) {
				t.Errorf("the peer marked config block %d %v, want VALID", n, api.TxValidationCode(code))
			}
		}
	}
	m := cl.members[3].o.Metrics().Raft
	t.Logf("%d txs ordered; orderer 4: %v", len(want), m)
	if m.ConfigSeq != 2 || m.Orderers != 3 {
		t.Errorf("orderer 4 reports config %d with %d orderers, want 2 and 3", m.ConfigSeq, m.Orderers)
	}

	// Restarted, the joined orderer and an original one know the config
	// (from their snapshots or logs) and order on.
	other := lead // an original member, here the leader: a new one is elected meanwhile
	for _, i := range []int{3, other} {
		cl.stop(i, false)
		cl.start(i)
		// From its snapshot at once, or once it has replayed its log.
		deadline := time.Now().Add(10 * time.Second)
		for info := cl.members[i].o.ConfigInfo(); info.Sequence != 2 || len(info.Orderers) != 3; info = cl.members[i].o.ConfigInfo() {
			if time.Now().After(deadline) {
				t.Fatalf("orderer %d restarted with config %d and %d orderers, want 2 and 3", i+1, info.Sequence, len(info.Orderers))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	cl.leader()
	for id := range cl.submitN(10, "restarted", 3, other) {
		want[id] = true
	}
	cl.checkMembers(want, 2)
}
