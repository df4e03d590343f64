package orderer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
	"github.com/strand-ledger/strand/orderer/cut"
	"github.com/strand-ledger/strand/policy"
)

// TestPeerCommitsOrderedBlocks feeds the orderer's block stream into a
// real committer: the peer accepts the chain links, data hashes and
// orderer signatures, and commits every transaction as VALID.
func TestPeerCommitsOrderedBlocks(t *testing.T) {
	n := newTestNet(t)
	o := n.start(t, cut.Config{MaxTxs: 4, Timeout: 20 * time.Millisecond})
	peerStore := openStore(t, t.TempDir())
	defer peerStore.Close()
	db := memdb.New()
	p, err := committer.New(committer.Channel{
		Name: testChannel, Registry: n.reg, OrdererOrgs: []string{"OrdererOrg"},
		Policies: map[string]*policy.Policy{testContract: policy.MustParse("AND('Org1.peer','Org2.peer')")},
	}, peerStore, db, committer.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sub := p.Subscribe(64)

	ids := submitAll(t, n, o, keys("p", 10)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	txs := 0
	stop := errors.New("enough")
	err = o.Deliver(ctx, 0, true, func(raw []byte) error {
		b, err := api.DecodeBlock(raw)
		if err != nil {
			return err
		}
		if err := p.Deliver(raw); err != nil {
			return err
		}
		if txs += len(b.Transactions); txs == len(ids) {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Deliver into the committer: %v", err)
	}
	if err := p.Sync(); err != nil {
		t.Fatalf("committer: %v", err)
	}
	var got []string
	for p.Height() > 0 && len(got) < len(ids) {
		ev := <-sub.C
		for i, id := range ev.TxIDs {
			if code := api.TxValidationCode(ev.Codes[i]); code != api.TxValidationCode_VALID {
				t.Errorf("block %d tx %s: code %v, want VALID", ev.Number, id, code)
			}
			got = append(got, id)
		}
	}
	for i := range ids {
		if i >= len(got) || got[i] != ids[i] {
			t.Fatalf("committed tx ids %v, want %v", got, ids)
		}
	}
	v, ok, err := db.Get(testContract, "pca")
	if err != nil || !ok || string(v.Data) != "v-pca" {
		t.Errorf("state kv/pca = %q, %v, %v; want v-pca", v.Data, ok, err)
	}
}
