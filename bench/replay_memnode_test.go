package bench

import (
	"testing"
	"time"

	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/identity"
)

// TestValidatorMemnode: the validator benchmark replays a signed chain
// into a peer whose state is on an in-process memory node (real gRPC and
// mutual TLS), and the final state matches the generator's model (the
// run fails otherwise) with every transaction valid.
func TestValidatorMemnode(t *testing.T) {
	res, err := RunValidator(ValidatorConfig{
		Chain:   ChainSpec{Accounts: 200, Blocks: 5, BlockSize: 20, Seed: 7, Alg: identity.ECDSAP256},
		Mode:    committer.Sequential,
		StateDB: "memnode", NoSync: true, CryptoTime: 50 * time.Millisecond, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.StateDB != "memnode" || res.Txs != 100 || res.Valid != res.Txs || !(res.TPS > 0) {
		t.Fatalf("result %+v: want 100 valid transactions replayed into the memnode state", res)
	}
}
