package endorser

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// TestMinHeight: a proposal whose MinHeight is above the endorser's state
// waits for the state to get there and reads what the blocks in between
// wrote, whether the endorser polls Height or waits with Synced; one
// whose state stands still is refused with 503 after CatchUpStall.
func TestMinHeight(t *testing.T) {
	for _, withSynced := range []bool{false, true} {
		name := "polled"
		if withSynced {
			name = "synced"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.commit(t, "k=old") // height 1
			var height atomic.Uint64
			height.Store(1)
			moved := make(chan struct{})
			cfg := f.config(f.peer1)
			cfg.Height = height.Load
			if withSynced {
				cfg.Synced = func(ctx context.Context, h uint64) error {
					for height.Load() < h {
						select {
						case <-ctx.Done():
							return ctx.Err()
						case <-moved:
						}
					}
					return nil
				}
			}
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ask := func(min uint64) *api.ProposalResponse {
				sp := sign(t, proposal(t, f.client, testChannel, testNS, "do", "get", "k"), f.client)
				sp.MinHeight = min
				return e.ProcessProposal(t.Context(), sp)
			}
			// The state moves to height 2 a while after the proposal came.
			const lag = 50 * time.Millisecond
			start := time.Now()
			go func() {
				time.Sleep(lag)
				var b statedb.Batch
				b.Put(testNS, "k", []byte("new"), statedb.Version{Block: 1})
				if err := f.db.Apply(&b, 2, false); err != nil {
					t.Error(err)
				}
				height.Store(2)
				close(moved)
			}()
			r := ask(2)
			if r.Status != http.StatusOK || r.Height != 2 {
				t.Fatalf("MinHeight 2 at height 1: status %d height %d (%s); want 200 at height 2", r.Status, r.Height, r.Message)
			}
			if d := time.Since(start); d < lag {
				t.Fatalf("answered in %v, before the state moved (%v)", d, lag)
			}
			if rp := decodePayload(t, r); string(rp.Result) != "k=new" {
				t.Fatalf("read %q; want k=new, the write of block 2", rp.Result)
			}
			// At or below the height: no wait.
			if r := ask(1); r.Status != http.StatusOK || r.Height != 2 {
				t.Fatalf("MinHeight 1 at height 2: status %d height %d (%s)", r.Status, r.Height, r.Message)
			}
			start = time.Now()
			r = ask(5)
			if r.Status != http.StatusServiceUnavailable || !strings.Contains(r.Message, "at least 5 blocks") || !strings.Contains(r.Message, "holds 2") {
				t.Fatalf("MinHeight 5 at height 2: status %d (%s); want 503 naming both heights", r.Status, r.Message)
			}
			if d := time.Since(start); d < CatchUpStall || d >= CatchUpWait {
				t.Fatalf("refused after %v; want the wait cut short by a state standing still for CatchUpStall (%v)", d, CatchUpStall)
			}
			if m := e.Metrics(); m.Behind != 1 || m.CaughtUp != 2 || m.Endorsed != 2 {
				t.Fatalf("metrics %+v; want 2 endorsed, 2 waits, 1 refused behind", m)
			}
		})
	}
}

// TestMinHeightUnauthenticated: a proposal that fails admission is refused
// at once, whatever MinHeight it asks for: nothing waits for a stranger.
func TestMinHeightUnauthenticated(t *testing.T) {
	f := newFixture(t)
	cfg := f.config(f.peer1)
	cfg.Height = func() uint64 { return 1 }
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sp := sign(t, proposal(t, f.client, testChannel, testNS, "do", "get", "k"), f.client)
	sp.Signature[len(sp.Signature)-1] ^= 1
	sp.MinHeight = 1 << 40
	start := time.Now()
	r := e.ProcessProposal(t.Context(), sp)
	if r.Status != http.StatusForbidden || time.Since(start) >= CatchUpWait {
		t.Fatalf("forged proposal: status %d after %v (%s); want 403 at once", r.Status, time.Since(start), r.Message)
	}
	if m := e.Metrics(); m.CaughtUp != 0 {
		t.Fatalf("a forged proposal waited: %+v", m)
	}
}

func decodePayload(t *testing.T, r *api.ProposalResponse) *api.ResponsePayload {
	t.Helper()
	rp := new(api.ResponsePayload)
	if err := proto.Unmarshal(r.ResponsePayload, rp); err != nil {
		t.Fatal(err)
	}
	return rp
}
