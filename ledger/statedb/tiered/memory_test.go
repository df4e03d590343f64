package tiered

import (
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
)

// TestSettle checks the memory tier's eviction rule: Settle forgets the
// pending batches storage now holds, and drops a version only if it was
// written at or below the durable height, never a newer one written
// since the victims were chosen.
func TestSettle(t *testing.T) {
	tier := newLocalTier(0)
	k := string(statedb.AppendKey(nil, "cc", "k"))
	put := func(h uint64, v string) {
		tier.Apply([]statedb.Write{{Namespace: "cc", Key: "k", Value: []byte(v), Version: statedb.Version{Block: h}}}, h)
	}
	put(1, "one")
	put(3, "three")
	if got := tier.Settle(2, []string{k}); got != 0 {
		t.Fatalf("Settle(2) dropped %d versions; the version of height 3 is not durable", got)
	}
	if e, ok := tier.View().Get(k); !ok || string(e.data) != "three" {
		t.Fatalf("after Settle(2): %q, %v; want the version of height 3", e.data, ok)
	}
	if p := tier.Pending(0); len(p) != 1 || p[0].height != 3 {
		t.Fatalf("after Settle(2) pending = %v, want only height 3", p)
	}
	if got := tier.Settle(3, []string{k}); got != 1 {
		t.Fatalf("Settle(3) dropped %d versions, want 1", got)
	}
	v := tier.View()
	if _, ok := v.Get(k); ok || v.Bytes() != 0 || v.Height() != 3 || len(tier.Pending(0)) != 0 {
		t.Fatalf("after Settle(3): found %v, %d bytes, height %d, %d pending; want empty at height 3", ok, v.Bytes(), v.Height(), len(tier.Pending(0)))
	}
}
