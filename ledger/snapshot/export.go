package snapshot

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// Source is the ledger a snapshot is taken of: a peer's block store and
// state database of one channel. Export may run while the peer commits.
type Source struct {
	Channel string
	Store   *ledger.BlockStore
	State   statedb.DB
}

// Export writes a snapshot of src to path, at the height of the state's
// savepoint (see the package documentation for why that is consistent).
// It writes path+".tmp", fsyncs it and renames it to path, so path holds
// a whole snapshot or nothing new.
func Export(path string, src Source) (Info, error) {
	dumper, ok := src.State.(statedb.Dumper)
	if !ok {
		return Info{}, fmt.Errorf("snapshot: the state database %T cannot dump its state", src.State)
	}
	genesis, err := genesisOf(src.Store)
	if err != nil {
		return Info{}, err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: create %s: %w", tmp, err)
	}
	info, err := write(f, src, dumper, genesis)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return Info{}, fmt.Errorf("snapshot: export to %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return info, nil
}

func write(f *os.File, src Source, dumper statedb.Dumper, genesis []byte) (Info, error) {
	w, err := NewWriter(f, src.Channel, genesis)
	if err != nil {
		return Info{}, err
	}
	sp, err := dumper.Dump(w.State)
	if err != nil {
		return Info{}, err
	}
	h, base := src.Store.Height(), src.Store.Base()
	switch {
	case sp == 0:
		return Info{}, fmt.Errorf("snapshot: the state has applied no block yet (savepoint 0): nothing to export")
	case sp > h:
		return Info{}, fmt.Errorf("snapshot: the state's savepoint %d is ahead of the block store's height %d "+
			"(a machine crash with relaxed durability): start the peer once, so that it rebuilds its state, then export", sp, h)
	case sp < base.Height:
		return Info{}, fmt.Errorf("snapshot: the state's savepoint %d is below the block store's base %d", sp, base.Height)
	}
	prev := base.PrevHash
	if sp > base.Height {
		b, err := src.Store.Block(sp - 1)
		if err != nil {
			return Info{}, err
		}
		prev = api.HeaderHash(b.Header)
	}
	if err := src.Store.EachTx(sp, w.Tx); err != nil {
		return Info{}, err
	}
	sum, err := w.Finish(sp, prev)
	if err != nil {
		return Info{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		return Info{}, err
	}
	return Info{Channel: src.Channel, Genesis: genesis, Height: sp, PrevHash: prev,
		States: w.states, TxIDs: w.txs, Size: fi.Size(), SHA256: sum}, nil
}

// genesisOf returns the store's block 0, kept in its base if it has one.
func genesisOf(s *ledger.BlockStore) ([]byte, error) {
	if b := s.Base(); b.Height > 0 {
		return b.Genesis, nil
	}
	if s.Height() == 0 {
		return nil, fmt.Errorf("snapshot: the block store is empty: nothing to export")
	}
	return s.RawBlock(0)
}
