package committer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/identity"
)

// TestVerdicts: stage 1 with a compute node's verdicts decides the codes
// it decides alone, whether the verdict is honest (CheckSignatures), covers
// only some signatures, or calls every signature invalid; a verdict is
// what the primary trusts, no more: one that calls a bad signature valid
// is believed (the trust the org gives its compute nodes, remote.go).
func TestVerdicts(t *testing.T) {
	for _, alg := range []identity.Algorithm{identity.ECDSAP256, identity.Ed25519} {
		t.Run(alg.String(), func(t *testing.T) {
			n := newTestNetAlg(t, alg)
			rules := n.ch.newRuleSet(0, lifecycle.NewTable(n.ch.Policies, nil), nil)
			valid := n.tx(rwset(testContract, nil, wr("a", "1")))
			badCreator := retag(t, n.tx(rwset(testContract, nil, wr("b", "1"))), func(tx *api.Transaction) { tx.Signature[len(tx.Signature)-3] ^= 1 })
			badEndorsement := retagPayload(t, n.tx(rwset(testContract, nil, wr("c", "1"))), n, func(p *api.TxPayload) { p.Endorsements[1].Signature[5] ^= 1 })
			cases := []struct {
				name            string
				raw             []byte
				checked, holds  uint64
				trustedLieValid bool // a verdict calling every signature valid makes it VALID
			}{
				{"valid", valid, 0b111, 0b111, false},
				{"tampered creator signature", badCreator, 0b111, 0b110, true},
				{"tampered endorsement", badEndorsement, 0b111, 0b011, true},
				{"creator of an unknown org", n.txBy(rwset(testContract, nil, wr("d", "1")), n.unknownOrgClient, n.peer1, n.peer2), 0b110, 0b110, false},
				{"garbage", []byte("\xff\xff\xff garbage"), 0, 0, false},
				{"empty", nil, 0, 0, false},
				{"other channel", n.txWith(api.TxSpec{Channel: "ch2", Contract: testContract, RWSet: rwset(testContract, nil, wr("x", "1"))}), 0, 0, false},
			}
			raws := make([][]byte, len(cases))
			for i, c := range cases {
				raws[i] = c.raw
			}
			honest, err := CheckSignatures(n.ch.Registry, testChannel, raws)
			if err != nil {
				t.Fatal(err)
			}
			// Valid transactions alone: every worker's Ed25519 batch
			// passes, and every bit holds.
			goods, err := CheckSignatures(n.ch.Registry, testChannel, [][]byte{valid, n.tx(rwset(testContract, nil, wr("g", "1"))), n.tx(rwset(testContract, nil, wr("h", "1")))})
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range goods {
				if v.Checked != 0b111 || v.Valid != 0b111 {
					t.Errorf("valid transaction %d among valid ones: verdict checked %03b valid %03b, want 111 and 111", i, v.Checked, v.Valid)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for i, c := range cases {
				v := honest[i]
				if v.Checked != c.checked || v.Valid != c.holds {
					t.Errorf("%s: verdict checked %03b valid %03b, want %03b and %03b", c.name, v.Checked, v.Valid, c.checked, c.holds)
				}
				alone := verifyTx(&n.ch, rules, c.raw).code
				vs := []Verdict{v, {Checked: ^uint64(0)}, {}}
				for range 16 {
					m := rng.Uint64()
					vs = append(vs, Verdict{Checked: v.Checked & m, Valid: v.Valid & m})
				}
				for _, w := range vs {
					if got := checkTx(&n.ch, rules, c.raw, nil, w).code; got != alone {
						t.Errorf("%s with verdict %+v: %v, want %v as decided alone", c.name, w, got, alone)
					}
				}
				lie := checkTx(&n.ch, rules, c.raw, nil, Verdict{Checked: ^uint64(0), Valid: ^uint64(0)}).code
				if c.trustedLieValid && lie != api.TxValidationCode_VALID {
					t.Errorf("%s with a verdict calling everything valid: %v; want VALID (the primary believes its compute node)", c.name, lie)
				}
			}
		})
	}
}

func TestCheckSignaturesLimit(t *testing.T) {
	n := newTestNet(t)
	if _, err := CheckSignatures(n.ch.Registry, testChannel, make([][]byte, remoteMaxTxs+1)); !errors.Is(err, ErrTooManyTxs) {
		t.Fatalf("%d transactions: %v, want ErrTooManyTxs", remoteMaxTxs+1, err)
	}
	vs, err := CheckSignatures(n.ch.Registry, testChannel, make([][]byte, remoteMaxTxs))
	if err != nil || len(vs) != remoteMaxTxs {
		t.Fatalf("%d empty transactions: %d verdicts, %v", remoteMaxTxs, len(vs), err)
	}
}

// FuzzCheckSignatures: a compute node's checks of arbitrary transaction
// bytes never panic, call valid only what they checked, and change no
// code stage 1 decides.
func FuzzCheckSignatures(f *testing.F) {
	nets := []*testNet{newTestNetAlg(f, identity.ECDSAP256), newTestNetAlg(f, identity.Ed25519)}
	for _, n := range nets {
		f.Add(n.tx(rwset(testContract, nil, wr("a", "1"))))
		f.Add(n.txBy(rwset(testContract, nil, wr("a", "1")), n.client1, n.peer1))
	}
	f.Add([]byte{})
	f.Add([]byte("\x0a\x02\x0a\x00\x12\x01x"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, n := range nets {
			rules := n.ch.newRuleSet(0, lifecycle.NewTable(n.ch.Policies, nil), nil)
			vs, err := CheckSignatures(n.ch.Registry, testChannel, [][]byte{raw})
			if err != nil || len(vs) != 1 {
				t.Fatalf("%d verdicts, %v", len(vs), err)
			}
			if vs[0].Valid&^vs[0].Checked != 0 {
				t.Fatalf("verdict %+v calls valid what it did not check", vs[0])
			}
			if a, b := verifyTx(&n.ch, rules, raw).code, checkTx(&n.ch, rules, raw, nil, vs[0]).code; a != b {
				t.Fatalf("with the verdict %+v: %v, alone %v", vs[0], b, a)
			}
		}
	})
}

// TestRemoteComesAndGoes delivers blocks while a compute node joins and
// leaves again and again (-race): every block commits with the codes it
// would have alone, including those queued for the compute node when it
// left, which this peer then checks itself.
func TestRemoteComesAndGoes(t *testing.T) {
	n := newTestNet(t)
	p := openPeer(t, n, t.TempDir(), Options{Mode: Parallel})
	slow := &slowRemote{fakeRemote: fakeRemote{kind: "honest", reg: n.ch.Registry}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			remove := p.AddRemote("compute0", slow)
			select {
			case <-stop:
				remove()
				return
			case <-time.After(3 * time.Millisecond):
			}
			remove()
		}
	}()
	const blocks = 40
	for i := range blocks {
		var txs [][]byte
		for k := range 5 {
			txs = append(txs, n.tx(rwset(testContract, nil, wr(fmt.Sprintf("k%d-%d", i, k), "1"))))
		}
		txs = append(txs, retag(t, n.tx(rwset(testContract, nil, wr("bad", "1"))), func(tx *api.Transaction) { tx.Signature[len(tx.Signature)-3] ^= 1 }))
		if err := p.Deliver(n.block(txs...)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-done
	m := p.Metrics()
	if m.Height != blocks || m.ByCode["VALID"] != 5*blocks || m.ByCode["BAD_CREATOR_SIGNATURE"] != blocks || m.Remotes != 0 {
		t.Fatalf("after %d blocks of 5 valid and 1 badly signed transactions: %v (remote checked %d, failed %d, %d remotes)", blocks, m.ByCode, m.RemoteTxs, m.RemoteFailed, m.Remotes)
	}
	t.Logf("compute node asked %d times; it checked %d transactions", slow.calls.Load(), m.RemoteTxs)
}

// slowRemote answers after a millisecond, so that jobs are still queued
// for it when it leaves.
type slowRemote struct{ fakeRemote }

func (s *slowRemote) CheckSignatures(ctx context.Context, txs [][]byte) ([]Verdict, error) {
	time.Sleep(time.Millisecond)
	return s.fakeRemote.CheckSignatures(ctx, txs)
}

// TestRemoteHangs: a compute node that never answers costs its requests'
// timeout, not the blocks: every block commits, checked here, and it is
// not asked again before its backoff.
func TestRemoteHangs(t *testing.T) {
	n := newTestNet(t)
	p := openPeer(t, n, t.TempDir(), Options{Mode: Parallel})
	hung := &hangingRemote{}
	defer p.AddRemote("compute0", hung)()
	start := time.Now()
	const blocks = 30
	for i := range blocks {
		if err := p.Deliver(n.block(n.tx(rwset(testContract, nil, wr(fmt.Sprintf("h%d", i), "1"))))); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	m := p.Metrics()
	// Two workers each waited one timeout and then backed off for a
	// second, checking here: at most one more request each.
	if m.Height != blocks || m.ByCode["VALID"] != blocks || m.RemoteFailed == 0 || hung.calls.Load() > 2*remoteInFlight {
		t.Fatalf("%d blocks in %v with a hung compute node: %v, %d requests (%d failed); want all VALID after at most %d requests",
			blocks, took, m.ByCode, hung.calls.Load(), m.RemoteFailed, 2*remoteInFlight)
	}
}

// hangingRemote answers only when its request is cancelled.
type hangingRemote struct{ calls atomic.Int64 }

func (h *hangingRemote) CheckSignatures(ctx context.Context, _ [][]byte) ([]Verdict, error) {
	h.calls.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}
