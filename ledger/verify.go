package ledger

import (
	"fmt"
	"io"

	"github.com/strand-ledger/strand/api"
	"google.golang.org/protobuf/proto"
)

// VerifyChain reads and decodes every block below the current height (from
// the base, in a store created from a snapshot, whose first block must
// name the base's previous hash) and
// checks numbering, previous-hash links and data hashes. The error names
// the first bad block and why; it wraps ErrChainBroken for a broken link
// and ErrCorrupt for anything else.
func (s *BlockStore) VerifyChain() error {
	height := s.Height()
	it := s.Iterator(s.base.Height)
	defer it.Close()
	var b api.Block
	prev := s.base.PrevHash
	for n := s.base.Height; n < height; n++ {
		num, raw, err := it.Next()
		if err == io.EOF {
			return fmt.Errorf("%w: block %d: iterator ended early (height %d)", ErrCorrupt, n, height)
		}
		if err != nil {
			return err
		}
		if num != n {
			return fmt.Errorf("%w: block %d: iterator returned block %d", ErrCorrupt, n, num)
		}
		proto.Reset(&b)
		if err := proto.Unmarshal(raw, &b); err != nil {
			return fmt.Errorf("%w: block %d does not decode: %v", ErrCorrupt, n, err)
		}
		h := b.GetHeader()
		if h.GetNumber() != n {
			return fmt.Errorf("%w: block %d: header says block %d", ErrCorrupt, n, h.GetNumber())
		}
		if n == 0 && !allZero(h.GetPreviousHash()) {
			return fmt.Errorf("%w: block 0 has previous hash %s, want empty or zero", ErrChainBroken, shortHex(h.GetPreviousHash()))
		}
		if n > 0 && string(h.GetPreviousHash()) != string(prev) {
			return fmt.Errorf("%w: block %d has previous hash %s, but block %d has header hash %s",
				ErrChainBroken, n, shortHex(h.GetPreviousHash()), n-1, shortHex(prev))
		}
		if dh := api.DataHash(b.Transactions); string(dh) != string(h.GetDataHash()) {
			return fmt.Errorf("%w: block %d: header data hash %s, transactions hash to %s",
				ErrCorrupt, n, shortHex(h.GetDataHash()), shortHex(dh))
		}
		prev = api.HeaderHash(h)
	}
	return nil
}
