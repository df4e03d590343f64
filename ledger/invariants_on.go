//go:build invariants

package ledger

import (
	"fmt"

	"github.com/strand-ledger/strand/api"
	"google.golang.org/protobuf/proto"
)

// invariants enables expensive self-checks (build with -tags invariants).
const invariants = true

// checkEntryAgainstRaw checks that an Entry agrees with the block it
// carries, as the index rebuilt from Raw would.
func checkEntryAgainstRaw(e *Entry) error {
	var b api.Block
	if err := proto.Unmarshal(e.Raw, &b); err != nil {
		return fmt.Errorf("ledger invariant: block %d: raw does not decode: %v", e.Number, err)
	}
	h := b.GetHeader()
	switch {
	case h.GetNumber() != e.Number:
		return fmt.Errorf("ledger invariant: entry %d carries block %d", e.Number, h.GetNumber())
	case string(api.HeaderHash(h)) != string(e.HeaderHash):
		return fmt.Errorf("ledger invariant: block %d: entry header hash differs from the raw header's", e.Number)
	case string(h.GetPreviousHash()) != string(e.PrevHash):
		return fmt.Errorf("ledger invariant: block %d: entry previous hash differs from the raw header's", e.Number)
	case len(b.Transactions) != len(e.TxIDs):
		return fmt.Errorf("ledger invariant: block %d: %d transactions, %d tx ids", e.Number, len(b.Transactions), len(e.TxIDs))
	case string(b.GetMetadata().GetValidationCodes()) != string(e.Codes):
		return fmt.Errorf("ledger invariant: block %d: entry codes differ from the metadata's", e.Number)
	}
	for i, tx := range b.Transactions {
		t, _, _ := api.DecodeTx(tx)
		if t.ID() != e.TxIDs[i] {
			return fmt.Errorf("ledger invariant: block %d tx %d: id %q, raw says %q", e.Number, i, e.TxIDs[i], t.ID())
		}
	}
	return nil
}
