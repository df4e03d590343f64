package committer

import (
	"sync"
	"sync/atomic"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// txWork is one transaction as stage 2 sees it. code arrives as stage 1's
// verdict (VALID marks a candidate) and leaves as the final code.
type txWork struct {
	rw   *api.RWSet
	code api.TxValidationCode
	ver  statedb.Version
}

// checkAndApply is the one MVCC decision both modes use: the transaction is
// valid if every key it read still has the version it read (or is still
// absent) and every range it read holds exactly the keys and versions it
// saw; a valid transaction's writes go into the view. The caller guarantees
// that every earlier transaction of the block that writes a key this one
// reads (or writes, or whose range covers it) has finished, and no later one
// has started writing such a key. The only error is an I/O error.
func checkAndApply(v *view, pre *blockReads, t *txWork, buf *[]byte) error {
	for _, ns := range t.rw.Namespaces {
		for _, r := range ns.Reads {
			ok, err := readStillValid(v, pre, ns.Namespace, r, buf)
			if err != nil {
				return err
			}
			if !ok {
				t.code = api.TxValidationCode_MVCC_READ_CONFLICT
				return nil
			}
		}
	}
	for _, ns := range t.rw.Namespaces {
		for _, rr := range ns.RangeReads {
			ok, err := rangeStillValid(v, ns.Namespace, rr)
			if err != nil {
				return err
			}
			if !ok {
				t.code = api.TxValidationCode_PHANTOM_READ_CONFLICT
				return nil
			}
		}
	}
	for _, ns := range t.rw.Namespaces {
		for _, w := range ns.Writes {
			v.put(ns.Namespace, w.Key, w.Value, w.IsDelete, t.ver, buf)
		}
	}
	t.code = api.TxValidationCode_VALID
	return nil
}

func readStillValid(v *view, pre *blockReads, ns string, r *api.KVRead, buf *[]byte) (bool, error) {
	ver, found, err := v.version(ns, r.Key, pre, buf)
	if err != nil {
		return false, err
	}
	if r.Version == nil {
		return !found, nil
	}
	return found && ver.Block == r.Version.Block && ver.Tx == r.Version.Tx, nil
}

// rangeEnd returns the end of the key range a range read covers: its end
// key when it ran to completion, just past its last key when it stopped
// early. covered is false for an early stop that saw nothing.
func rangeEnd(rr *api.RangeRead) (end string, covered bool) {
	if rr.Exhausted {
		return rr.EndKey, true
	}
	if len(rr.Reads) == 0 {
		return "", false
	}
	return rr.Reads[len(rr.Reads)-1].Key + "\x00", true
}

func rangeStillValid(v *view, ns string, rr *api.RangeRead) (bool, error) {
	end, covered := rangeEnd(rr)
	if !covered {
		return true, nil
	}
	now, err := v.scan(v.checkDB, ns, rr.StartKey, end, len(rr.Reads)+1)
	if err != nil {
		return false, err
	}
	if len(now) != len(rr.Reads) {
		return false, nil
	}
	for i, kv := range now {
		r := rr.Reads[i]
		if r.Key != kv.key || r.Version == nil || r.Version.Block != kv.value.Version.Block || r.Version.Tx != kv.value.Version.Tx {
			return false, nil
		}
	}
	return true, nil
}

// validateSequential runs checkAndApply on the candidates in block order.
func validateSequential(v *view, txs []txWork) error {
	pre, err := v.fetchReads(txs)
	if err != nil {
		return err
	}
	return checkSequential(v, pre, txs)
}

func checkSequential(v *view, pre *blockReads, txs []txWork) error {
	var buf []byte
	for i := range txs {
		if txs[i].code != api.TxValidationCode_VALID {
			continue
		}
		if err := checkAndApply(v, pre, &txs[i], &buf); err != nil {
			return err
		}
	}
	return nil
}

// validateParallel runs checkAndApply on the candidates along the block's
// dependency graph on up to workers goroutines. The graph orders every
// pair of transactions that touch a common key (one of them writing it),
// which is exactly what checkAndApply's contract requires, so the outcome
// equals validateSequential's.
func validateParallel(v *view, txs []txWork, workers int) error {
	pre, err := v.fetchReads(txs)
	if err != nil {
		return err
	}
	g := buildGraph(txs)
	if g.candidates <= 1 || workers <= 1 {
		return checkSequential(v, pre, txs)
	}
	ready := make(chan int32, g.candidates)
	for i := range txs {
		if txs[i].code == api.TxValidationCode_VALID && g.indeg[i] == 0 {
			ready <- int32(i)
		}
	}
	var (
		left     = int32(g.candidates)
		firstErr error
		errOnce  sync.Once
		wg       sync.WaitGroup
	)
	if workers > g.candidates {
		workers = g.candidates
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := range ready {
				if err := checkAndApply(v, pre, &txs[i], &buf); err != nil {
					errOnce.Do(func() { firstErr = err })
				}
				for _, s := range g.succ[i] {
					if atomic.AddInt32(&g.indeg[s], -1) == 0 {
						ready <- s
					}
				}
				if atomic.AddInt32(&left, -1) == 0 {
					close(ready)
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}
