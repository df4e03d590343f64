package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/gateway/testnet"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
	"github.com/strand-ledger/strand/policy"
)

// catchUp is a peer behind the network: an endorser over state that
// holds what copyFrom last copied, at the height it was copied.
type catchUp struct {
	db     *memdb.DB
	height atomic.Uint64
	e      *endorser.Endorser
}

func newCatchUp(t *testing.T, n *testnet.Network, org string) *catchUp {
	t.Helper()
	c := &catchUp{db: memdb.New()}
	c.height.Store(1)
	e, err := endorser.New(endorser.Config{Channel: testnet.Channel, Registry: n.Registry,
		Signer:    n.Issue(t, org, "peer-behind."+org, identity.RolePeer),
		Contracts: map[string]contract.Contract{smallbank.Name: smallbank.New()},
		State:     c.db, Seen: func(string) (bool, error) { return false, nil }, Height: c.height.Load})
	if err != nil {
		t.Fatal(err)
	}
	c.e = e
	return c
}

// copyFrom makes the peer catch up with p now.
func (c *catchUp) copyFrom(p *testnet.Peer, keys ...string) error {
	var b statedb.Batch
	for _, key := range keys {
		v, ok, err := p.State.Get(smallbank.Name, key)
		if err != nil || !ok {
			return fmt.Errorf("state %s at %s: %v %v", key, p.Org, ok, err)
		}
		b.Put(smallbank.Name, key, v.Data, v.Version)
	}
	h := p.Committer.Height()
	if err := c.db.Apply(&b, h, false); err != nil {
		return err
	}
	c.height.Store(h)
	return nil
}

// release makes the peer catch up with p after d. A test that ends
// sooner stops it, or waits for it, so it never reports to a finished test.
func (c *catchUp) release(t *testing.T, p *testnet.Peer, d time.Duration, keys ...string) {
	done := make(chan struct{})
	timer := time.AfterFunc(d, func() {
		defer close(done)
		if err := c.copyFrom(p, keys...); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() {
		if !timer.Stop() {
			<-done
		}
	})
}

// behindLedger is a peer's ledger whose height is the catchUp's.
type behindLedger struct {
	gateway.Ledger
	c *catchUp
}

func (l behindLedger) Height() uint64 { return l.c.height.Load() }

// TestEndorseWaitsForPeerBehind: a peer whose answers report a lower
// height than the other's is waited for, longer than the attempts' backoff
// (20+40+80+160 ms) would allow, whether it is the remote or the local one.
func TestEndorseWaitsForPeerBehind(t *testing.T) {
	n := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	user := n.Issue(t, "Org1", "user", identity.RoleClient)
	// Two blocks: the peers are at height 2, a peer behind at 1.
	submit(t, ctx, gatewayClient(t, n.Peers[0].Addr), user, "create_account", "b", "B", "5", "5")
	submit(t, ctx, gatewayClient(t, n.Peers[0].Addr), user, "create_account", "a", "A", "5", "5")
	keys := []string{"account_a", "checking_a", "savings_a"}
	const lag = 700 * time.Millisecond
	orderers := []api.OrdererClient{api.NewOrdererClient(dial(t, n.OrdererAddr))}
	p := n.Peers[0]

	t.Run("remote", func(t *testing.T) {
		// Org2's peer has not seen the account: it refuses what the
		// local peer endorses, at a lower height.
		c := newCatchUp(t, n, "Org2")
		addr := serveEndorser(t, c.e)
		g := gatewayOver(t, n, []api.EndorserClient{api.NewEndorserClient(dial(t, addr))}, orderers)
		c.release(t, p, lag, keys...)
		start := time.Now()
		er, _ := g.Endorse(ctx, proposal(t, user, smallbank.Name, "deposit_checking", "a", "1"))
		if er.Status != http.StatusOK {
			t.Fatalf("Endorse with Org2's peer %v behind: %d %s, want 200 once it caught up", lag, er.Status, er.Message)
		}
		if d := time.Since(start); d < lag {
			t.Fatalf("Endorse answered in %v, before the peer behind caught up (%v)", d, lag)
		}
	})
	t.Run("another peer of the org", func(t *testing.T) {
		// Org2's first peer is behind and stays there; its second is up to
		// date: the gateway asks the second at once instead of waiting.
		c := newCatchUp(t, n, "Org2")
		addr := serveEndorser(t, c.e)
		g := gatewayOver(t, n, []api.EndorserClient{
			api.NewEndorserClient(dial(t, addr)),
			api.NewEndorserClient(dial(t, n.Peers[1].Addr)),
		}, orderers)
		start := time.Now()
		er, _ := g.Endorse(ctx, proposal(t, user, smallbank.Name, "deposit_checking", "a", "1"))
		if er.Status != http.StatusOK {
			t.Fatalf("Endorse with Org2's first peer behind and its second up to date: %d %s, want 200", er.Status, er.Message)
		}
		// The peer behind never catches up, so waiting for it would last
		// the gateway's whole 2 s timeout; asking the other takes
		// milliseconds. Half the timeout tells them apart with room to
		// spare on a loaded machine (an upper bound of the 700 ms lag left
		// less).
		if d := time.Since(start); d >= time.Second {
			t.Errorf("Endorse took %v: it waited for the peer behind instead of asking the other", d)
		}
		if m := g.Metrics(); m.EndorseRetried != 1 {
			t.Errorf("metrics %s: want one retry, at Org2's second peer", m)
		}
	})
	t.Run("local", func(t *testing.T) {
		// The local peer holds the account as of now; a deposit moves the
		// others on, so its answer differs, at a lower height.
		c := newCatchUp(t, n, "Org1")
		g, err := gateway.New(gateway.Config{Channel: testnet.Channel, LocalOrg: "Org1", Local: c.e,
			Remote:   map[string][]api.EndorserClient{"Org2": {api.NewEndorserClient(dial(t, n.Peers[1].Addr))}},
			Policies: map[string]*policy.Policy{smallbank.Name: policy.MustParse("AND('Org1.peer','Org2.peer')")},
			Orderers: orderers, Ledger: behindLedger{gateway.PeerLedger(p.Store, p.Committer), c},
			Blocks: p.Store, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.copyFrom(p, keys...); err != nil {
			t.Fatal(err)
		}
		submit(t, ctx, gatewayClient(t, p.Addr), user, "deposit_checking", "a", "1")
		// Submit waits for the gateway's own peer only: until Org2's peer
		// has the deposit too, it answers as the peer behind does, and the
		// endorsement needs no wait at all.
		for n.Peers[1].Committer.Height() < p.Committer.Height() {
			if ctx.Err() != nil {
				t.Fatalf("Org2's peer stayed at height %d, Org1's at %d", n.Peers[1].Committer.Height(), p.Committer.Height())
			}
			time.Sleep(time.Millisecond)
		}
		c.release(t, p, lag, keys...)
		start := time.Now()
		er, _ := g.Endorse(ctx, proposal(t, user, smallbank.Name, "deposit_checking", "a", "1"))
		if er.Status != http.StatusOK {
			t.Fatalf("Endorse with the local peer %v behind: %d %s, want 200 once it caught up", lag, er.Status, er.Message)
		}
		if d := time.Since(start); d < lag {
			t.Fatalf("Endorse answered in %v, before the local peer caught up (%v)", d, lag)
		}
	})
}

// TestEndorseReadsYourWrites: the local endorser (a compute node's, say)
// and Org2's peer are behind the gateway's peer by the same block, so
// they agree on what they read, but it is older than a deposit this
// gateway's peer has committed. The gateway asks the local endorser for
// its peer's height (MinHeight): it waits for it, reads the deposit, and
// disagrees with Org2's peer until that catches up; the transaction
// they endorse commits VALID where it would have been
// MVCC_READ_CONFLICT.
func TestEndorseReadsYourWrites(t *testing.T) {
	n := testnet.Start(t, testnet.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	user := n.Issue(t, "Org1", "user", identity.RoleClient)
	p := n.Peers[0]
	gw := gatewayClient(t, p.Addr)
	submit(t, ctx, gw, user, "create_account", "a", "A", "5", "5")
	keys := []string{"account_a", "checking_a", "savings_a"}
	local, remote := newCatchUp(t, n, "Org1"), newCatchUp(t, n, "Org2")
	for _, c := range []*catchUp{local, remote} {
		if err := c.copyFrom(p, keys...); err != nil {
			t.Fatal(err)
		}
	}
	submit(t, ctx, gw, user, "deposit_checking", "a", "1")
	g, err := gateway.New(gateway.Config{Channel: testnet.Channel, LocalOrg: "Org1", Local: local.e,
		Remote:   map[string][]api.EndorserClient{"Org2": {api.NewEndorserClient(dial(t, serveEndorser(t, remote.e)))}},
		Policies: map[string]*policy.Policy{smallbank.Name: policy.MustParse("AND('Org1.peer','Org2.peer')")},
		Orderers: []api.OrdererClient{api.NewOrdererClient(dial(t, n.OrdererAddr))},
		Ledger:   gateway.PeerLedger(p.Store, p.Committer), Blocks: p.Store, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const lag = 100 * time.Millisecond
	start := time.Now() // before the releases: they catch up at lag after them
	local.release(t, p, lag, keys...)
	remote.release(t, p, lag, keys...)
	er, _ := g.Endorse(ctx, proposal(t, user, smallbank.Name, "deposit_checking", "a", "1"))
	if er.Status != http.StatusOK {
		t.Fatalf("Endorse with both endorsers behind: %d %s; want 200 once they caught up", er.Status, er.Message)
	}
	if d := time.Since(start); d < lag {
		t.Fatalf("Endorse answered in %v, before the endorsers caught up (%v): it endorsed what they read behind", d, lag)
	}
	sig, _ := user.Sign(er.Payload)
	raw, _ := proto.Marshal(&api.Transaction{Payload: er.Payload, Signature: sig})
	sr, err := gw.Submit(ctx, &api.SubmitRequest{Transaction: raw, WaitCommit: true})
	if err != nil || sr.Status != http.StatusOK || sr.Commit.GetCode() != api.TxValidationCode_VALID {
		t.Fatalf("the endorsed deposit: %v %d %s, committed %v; want VALID", err, sr.GetStatus(), sr.GetMessage(), sr.GetCommit().GetCode())
	}
	if m := local.e.Metrics(); m.CaughtUp != 1 || m.Behind != 0 {
		t.Fatalf("local endorser %+v; want one proposal that waited and caught up", m)
	}
}
