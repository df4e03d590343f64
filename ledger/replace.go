package ledger

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/strand-ledger/strand/api"
)

// Replace stores e in place of damaged block e.Number (see Damaged). The
// entry must be a validated block, as for Append, that fits the chain on
// both sides: its previous hash is block e.Number-1's header hash (which
// must therefore not be damaged itself: replace the lowest first), and
// its header hash is the previous hash that block e.Number+1 names, where
// that block is intact. Its frame is written to its own replacement file
// (fsynced before the index names it, renamed into place, so a crash
// leaves either the old state or the whole replacement), and from then on
// readers get it instead of the damaged bytes, which stay where they are.
func (s *BlockStore) Replace(e Entry) error {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if s.mu.closed {
		return fmt.Errorf("ledger: replace block %d: %w", e.Number, ErrClosed)
	}
	n := e.Number
	d, ok := s.damage(n)
	if !ok {
		return fmt.Errorf("ledger: replace block %d: it is not damaged (damaged: %v)", n, s.Damaged())
	}
	if err := s.checkReplacement(&e); err != nil {
		return err
	}
	frame := appendFrame(nil, n, e.Raw)
	if err := writeFileSync(filepath.Join(s.dir, replacedDir), s.replacedPath(n), frame, !s.opts.NoSync); err != nil {
		return fmt.Errorf("ledger: write the replacement of block %d: %w", n, err)
	}
	w := s.w.index
	defer w.reset()
	if err := w.addBlock(n, blockLoc{seg: replacedSeg, size: int64(len(frame))}, e.TxIDs, e.Codes); err != nil {
		return fmt.Errorf("ledger: index the replacement of block %d: %w", n, err)
	}
	if err := w.flush(); err != nil {
		return err
	}
	s.dmg.Lock()
	delete(s.dmg.damaged, n)
	s.dmg.replaced[n] = true
	s.dmg.Unlock()
	s.metrics.replaced.Add(1)
	s.opts.Logger.Info("ledger: replaced a damaged block", "block", n, "was", d.String(), "file", s.replacedPath(n))
	return nil
}

// checkReplacement checks e's fields and its links to its neighbours.
func (s *BlockStore) checkReplacement(e *Entry) error {
	n := e.Number
	if len(e.HeaderHash) != api.HashSize {
		return fmt.Errorf("ledger: replace block %d: header hash is %d bytes, want %d", n, len(e.HeaderHash), api.HashSize)
	}
	if len(e.Codes) != len(e.TxIDs) {
		return fmt.Errorf("ledger: replace block %d: %d tx ids but %d validation codes", n, len(e.TxIDs), len(e.Codes))
	}
	if len(e.Raw) > maxRawSize {
		return fmt.Errorf("ledger: replace block %d: %d bytes, more than a frame holds (%d)", n, len(e.Raw), maxRawSize)
	}
	if invariants {
		if err := checkEntryAgainstRaw(e); err != nil {
			panic(err)
		}
	}
	var want []byte
	switch {
	case n == 0:
		if !allZero(e.PrevHash) {
			return fmt.Errorf("%w: replacement of block 0 has previous hash %s, want empty or zero", ErrChainBroken, shortHex(e.PrevHash))
		}
	case n == s.base.Height:
		want = s.base.PrevHash
	default:
		prev, err := s.Block(n - 1)
		if err != nil {
			return fmt.Errorf("ledger: replace block %d: reading block %d, whose header hash it must name: %w", n, n-1, err)
		}
		want = api.HeaderHash(prev.Header)
	}
	if n > 0 && !bytes.Equal(e.PrevHash, want) {
		return fmt.Errorf("%w: replacement of block %d has previous hash %s, but block %d has header hash %s",
			ErrChainBroken, n, shortHex(e.PrevHash), n-1, shortHex(want))
	}
	if n+1 >= s.Height() {
		return nil
	}
	if _, damaged := s.damage(n + 1); damaged {
		return nil // Replace(n+1) checks the link
	}
	next, err := s.Block(n + 1)
	if err != nil {
		return fmt.Errorf("ledger: replace block %d: reading block %d, which must name its header hash: %w", n, n+1, err)
	}
	if !bytes.Equal(next.Header.PreviousHash, e.HeaderHash) {
		return fmt.Errorf("%w: replacement of block %d has header hash %s, but block %d names %s as its previous hash",
			ErrChainBroken, n, shortHex(e.HeaderHash), n+1, shortHex(next.Header.PreviousHash))
	}
	return nil
}
