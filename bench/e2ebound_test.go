package bench

import (
	"math"
	"testing"
)

// TestNetworkBound counts a 2-org transaction's signatures as the nodes
// make and check them: the client signs twice and each endorser once; the
// orderer checks the creator; each endorser the proposal; each peer the
// creator and the other org's endorsement (its own it recognises); and
// every block is signed once and checked by both peers.
func TestNetworkBound(t *testing.T) {
	r := CryptoRates{SignPerSec: 1000, VerifyPerSec: 2000, StockVerifyPerSec: 1000}
	b := NetworkBound(r, 2, 25)
	if math.Abs(b.SignsPerTx-4.04) > 1e-9 || math.Abs(b.VerifiesPerTx-7.08) > 1e-9 {
		t.Fatalf("2 orgs, 25 tx a block: %.2f signs and %.2f verifies per tx, want 4.04 and 7.08", b.SignsPerTx, b.VerifiesPerTx)
	}
	if want := 1 / (4.04/1000 + 7.08/2000); math.Abs(b.TxPerSec-want) > 1e-9 {
		t.Errorf("TxPerSec %.3f, want %.3f", b.TxPerSec, want)
	}
	if want := 1 / (4.04/1000 + 7.08/1000); math.Abs(b.StockTxPerSec-want) > 1e-9 {
		t.Errorf("StockTxPerSec %.3f, want %.3f", b.StockTxPerSec, want)
	}
	if b := NetworkBound(r, 1, 1); b.SignsPerTx != 4 || b.VerifiesPerTx != 4 {
		t.Errorf("1 org, 1 tx a block: %.2f signs, %.2f verifies, want 4 and 4", b.SignsPerTx, b.VerifiesPerTx)
	}
}
