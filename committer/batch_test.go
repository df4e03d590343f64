package committer

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/identity"
)

// corruptedTx draws a transaction of n's Ed25519 channel, valid or broken
// in one of the ways a signature check decides: a flipped bit in the
// creator's or an endorser's signature (R or s), a signature over other
// bytes, a short or non-canonical signature, too few or repeated
// endorsers, a bad endorsement before good ones, a creator of the wrong
// role, payload bytes flipped, garbage.
func corruptedTx(t *testing.T, rng *rand.Rand, n *testNet, key int) []byte {
	creators := []*identity.Signer{n.client1, n.client2, n.org1Admin}
	creator := creators[rng.Intn(len(creators))]
	rw := rwset(testContract, nil, wr(fmt.Sprint("k", key), fmt.Sprint(rng.Int())))
	switch rng.Intn(14) {
	case 0:
		return retag(t, n.txBy(rw, creator, n.peer1, n.peer2), func(tx *api.Transaction) { tx.Signature[rng.Intn(64)] ^= 1 << rng.Intn(8) })
	case 1:
		return retagPayload(t, n.txBy(rw, n.client1, n.peer1, n.peer2), n, func(p *api.TxPayload) {
			p.Endorsements[rng.Intn(2)].Signature[rng.Intn(64)] ^= 1 << rng.Intn(8)
		})
	case 2:
		other := n.txBy(rw, creator, n.peer1, n.peer2)
		return retag(t, n.txBy(rw, creator, n.peer1, n.peer2), func(tx *api.Transaction) { tx.Signature = sigOf(t, other) })
	case 3:
		return retag(t, n.txBy(rw, creator, n.peer2, n.peer1), func(tx *api.Transaction) { tx.Signature = tx.Signature[:63] })
	case 4:
		return retag(t, n.txBy(rw, creator, n.peer1, n.peer2), func(tx *api.Transaction) { tx.Signature[63] |= 0xf0 }) // s >= L
	case 5:
		return n.txBy(rw, creator, n.peer1)
	case 6:
		return n.txBy(rw, creator, n.peer1, n.peer1)
	case 7:
		return retagPayload(t, n.txBy(rw, n.client1, n.peer1b, n.peer1, n.peer2), n, func(p *api.TxPayload) { p.Endorsements[0].Signature[40] ^= 4 })
	case 8:
		return n.txBy(rw, n.peer1, n.peer1, n.peer2)
	case 9:
		return retag(t, n.txBy(rw, creator, n.peer1, n.peer2), func(tx *api.Transaction) { tx.Payload[rng.Intn(len(tx.Payload))] ^= 1 })
	case 10:
		return []byte{byte(rng.Intn(256)), 0xff, 0x01}
	}
	return n.txBy(rw, creator, n.peer1, n.peer2)
}

func sigOf(t *testing.T, raw []byte) []byte {
	tx, _, err := api.DecodeTx(raw)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), tx.Envelope.Signature...)
}

// TestBatchMatchesSingle is the property behind Ed25519 batches: on random
// blocks with random corruptions, stage 1 with batches (of every size, so
// that batches that fail and fall back meet batches that pass) decides
// exactly the codes of one-by-one checks; and whole pipelines, sequential
// and parallel, batched and not, store the same codes and state.
func TestBatchMatchesSingle(t *testing.T) {
	seeds, blocks := 6, 12
	if testing.Short() {
		seeds, blocks = 2, 6
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			n := newTestNetAlg(t, identity.Ed25519)
			rules := n.ch.newRuleSet(0, lifecycle.NewTable(n.ch.Policies, nil), nil)
			peers := []*peer{
				openPeer(t, n, t.TempDir(), Options{Mode: Sequential, VerifyBatch: 1}),
				openPeer(t, n, t.TempDir(), Options{Mode: Sequential}),
				openPeer(t, n, t.TempDir(), Options{Mode: Parallel, VerifyWorkers: 1 + rng.Intn(4)}),
				openPeer(t, n, t.TempDir(), Options{Mode: Parallel, VerifyBatch: 1 + rng.Intn(8)}),
			}
			var batch identity.Batch
			codes := map[api.TxValidationCode]int{}
			for b := range blocks {
				txs := make([][]byte, 1+rng.Intn(40))
				for i := range txs {
					if i > 0 && rng.Intn(20) == 0 {
						txs[i] = txs[rng.Intn(i)] // a duplicate tx id
						continue
					}
					txs[i] = corruptedTx(t, rng, n, rng.Intn(8))
				}
				single := make([]txResult, len(txs))
				for i, raw := range txs {
					single[i] = verifyTx(&n.ch, rules, raw)
					codes[single[i].code]++
				}
				batched := make([]txResult, len(txs))
				for lo, per := 0, 1+rng.Intn(len(txs)); lo < len(txs); lo += per {
					hi := min(lo+per, len(txs))
					verifyTxs(&n.ch, rules, txs[lo:hi], batched[lo:hi], &batch, nil)
				}
				for i := range txs {
					if s, c := single[i], batched[i]; s.code != c.code || (s.err == nil) != (c.err == nil) {
						t.Fatalf("block %d tx %d: one by one %v (%v), batched %v (%v)", b, i, s.code, s.err, c.code, c.err)
					}
				}
				raw := n.block(txs...)
				for _, p := range peers {
					deliver(t, p, raw)
				}
			}
			if codes[api.TxValidationCode_VALID] == 0 || codes[api.TxValidationCode_BAD_CREATOR_SIGNATURE] == 0 ||
				codes[api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE] == 0 {
				t.Fatalf("codes %v: want valid transactions and both kinds of signature failure", codes)
			}
			want := blockCodes(t, peers[0], blocks)
			for i, p := range peers[1:] {
				if got := blockCodes(t, p, blocks); !reflect.DeepEqual(got, want) {
					t.Fatalf("peer %d stored codes %v, one by one sequential %v", i+1, got, want)
				}
				if a, b := dumpState(t, p.db, testContract), dumpState(t, peers[0].db, testContract); !reflect.DeepEqual(a, b) {
					t.Fatalf("peer %d state %v, one by one sequential %v", i+1, a, b)
				}
			}
		})
	}
}

func blockCodes(t *testing.T, p *peer, blocks int) [][]byte {
	var out [][]byte
	for i := range blocks {
		b, err := p.store.Block(uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b.Metadata.ValidationCodes)
	}
	return out
}

// FuzzVerifyTxs: arbitrary transaction bytes, between two valid Ed25519
// transactions, get the same codes checked as one batch as one by one.
func FuzzVerifyTxs(f *testing.F) {
	n := newTestNetAlg(f, identity.Ed25519)
	rules := n.ch.newRuleSet(0, lifecycle.NewTable(n.ch.Policies, nil), nil)
	valid := [][]byte{n.tx(rwset(testContract, nil, wr("a", "1"))), n.txBy(rwset(testContract, nil, wr("b", "1")), n.client2, n.peer2, n.peer1)}
	f.Add(valid[0])
	f.Add(valid[1])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		txs := [][]byte{valid[0], raw, valid[1]}
		var batch identity.Batch
		batched := make([]txResult, len(txs))
		verifyTxs(&n.ch, rules, txs, batched, &batch, nil)
		for i, raw := range txs {
			s := verifyTx(&n.ch, rules, raw)
			if s.code != batched[i].code || (s.err == nil) != (batched[i].err == nil) {
				t.Fatalf("tx %d: one by one %v (%v), batched %v (%v)", i, s.code, s.err, batched[i].code, batched[i].err)
			}
		}
	})
}
