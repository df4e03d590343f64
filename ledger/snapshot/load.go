package snapshot

import (
	"fmt"

	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// Target is where Load puts a snapshot.
type Target struct {
	// StoreDir is the directory of the new block store; it must not hold
	// one yet.
	StoreDir string
	// State is an empty state database (savepoint 0).
	State statedb.DB
	// Check, if set, sees the verified file's Info before anything is
	// written; its error stops Load (a peer checks the channel here).
	Check func(Info) error
}

// loadChunk is how many keys Load applies per state batch.
const loadChunk = 8192

// Load verifies the snapshot at path whole, then writes its state into
// t.State with savepoint N and creates a block store in t.StoreDir that
// starts at N with the snapshot's tx ids (ledger.NewBaseWriter). The state
// is written in batches whose savepoints count up to N; the block
// store's base file is streamed beside it and committed last. If Load
// fails, the block store directory holds no base; the caller removes the
// state.
func Load(path string, t Target) (Info, error) {
	sp, err := t.State.Savepoint()
	if err != nil {
		return Info{}, err
	}
	if sp != 0 {
		return Info{}, fmt.Errorf("snapshot: load %s: the state database is not empty (savepoint %d)", path, sp)
	}
	info, err := Verify(path)
	if err != nil {
		return Info{}, err
	}
	if t.Check != nil {
		if err := t.Check(info); err != nil {
			return Info{}, err
		}
	}
	base := ledger.Base{Height: info.Height, PrevHash: info.PrevHash, Genesis: info.Genesis}
	bw, err := ledger.NewBaseWriter(t.StoreDir, base, info.TxIDs)
	if err != nil {
		return Info{}, err
	}
	if err := load(path, info, t.State, bw); err != nil {
		bw.Abort()
		return Info{}, err
	}
	if err := bw.Commit(); err != nil {
		return Info{}, err
	}
	return info, nil
}

// load writes the state into db and streams the tx ids into bw.
func load(path string, info Info, db statedb.DB, bw *ledger.BaseWriter) error {
	var batch statedb.Batch
	height := uint64(0) // savepoint of the last batch applied
	_, err := Read(path, Visitor{
		State: func(ns, key string, v statedb.Value) error {
			batch.Put(ns, key, v.Data, v.Version)
			// Intermediate savepoints stay below N, which the last batch sets.
			if len(batch.Writes) < loadChunk || height+1 >= info.Height {
				return nil
			}
			height++
			err := db.Apply(&batch, height, false)
			batch.Reset()
			return err
		},
		Tx: bw.Add,
	})
	if err != nil {
		return err
	}
	if err := db.Apply(&batch, info.Height, true); err != nil {
		return fmt.Errorf("snapshot: load %s: %w", path, err)
	}
	return nil
}
