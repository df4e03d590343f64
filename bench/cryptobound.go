package bench

// MeasureCryptoBound measures the throughput a validator could reach if
// verifying signatures were all it did: the "crypto bound" that a validator
// benchmark reports beside its own throughput, measured in the same process
// and run so that both see the same machine.
//
// It verifies exactly the signatures a validating peer verifies for the
// workload blocks (each block's orderer signature over its header hash, each
// transaction's creator signature over its payload bytes, each endorsement
// over the response payload bytes), through the validator's code path:
// identity.Registry.Member, then Member.Verify. Messages are decoded before
// the clock starts; only identity lookup and verification are timed.
//
// CPU is the whole process's user+system time during the measurement, so
// run it while nothing else in the process works.
//
// It measures two bounds one after the other: the nodes' path, which
// ratios use, and the stock path, printed beside it so that what the
// nodes' path bought is visible and a ratio never hides it. For P-256 the
// nodes' path is precomputed tables for known keys (identity/p256) and the
// stock path crypto/ecdsa for every signature. For Ed25519 (a chain whose
// orgs have Ed25519 CAs) the nodes' path is the committer's: each block's
// transaction signatures split into one share per worker, each share
// checked as one identity.Batch (committer.Options.VerifyBatch's
// default), the block's signature alone with the orderer key's table
// (identity/zip215); the stock path checks every signature one by one
// (the library's single check, ZIP-215's rule, no tables).

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/proccpu"
)

// CryptoBound is the result of MeasureCryptoBound.
type CryptoBound struct {
	// Path names the verification path measured: "key tables" or
	// "crypto/ecdsa" for P-256, "Ed25519 batches" or "Ed25519 one by one".
	Path           string
	Workers        int
	SigsPerTx      float64
	Verifies       int
	Wall           time.Duration
	CPU            time.Duration // process user+system CPU during the measurement
	VerifiesPerSec float64
	TxPerSec       float64       // VerifiesPerSec / SigsPerTx
	CPUPerTx       time.Duration // CPU / Verifies × SigsPerTx: verification CPU of one tx
	// Stock is the same measurement through the stock path (crypto/ecdsa
	// alone, no key tables; Ed25519 one by one); nil when not measured.
	Stock *CryptoBound
}

func (b CryptoBound) String() string {
	s := fmt.Sprintf("crypto bound (nodes' path, %s): %d workers, %d verifies in %v (CPU %v): %.0f verifies/s, %.0f tx/s at %.2f sigs/tx, %v CPU/tx",
		b.Path, b.Workers, b.Verifies, b.Wall.Round(time.Millisecond), b.CPU.Round(time.Millisecond),
		b.VerifiesPerSec, b.TxPerSec, b.SigsPerTx, b.CPUPerTx.Round(100*time.Nanosecond))
	if st := b.Stock; st != nil {
		s += fmt.Sprintf("; stock (%s): %.0f verifies/s, %.0f tx/s, %v CPU/tx (nodes' path %.2fx)",
			st.Path, st.VerifiesPerSec, st.TxPerSec, st.CPUPerTx.Round(100*time.Nanosecond), b.TxPerSec/st.TxPerSec)
	}
	return s
}

// chainSig is one signature a validator verifies: signer, exact bytes, signature.
type chainSig struct {
	signer *api.Identity
	msg    []byte
	sig    []byte
}

// blockSigs is the signatures of one block: the orderer's, and each
// transaction's (creator, then endorsements).
type blockSigs struct {
	block chainSig
	txs   [][]chainSig
}

// chainSigs decodes blocks and returns every signature in them.
func chainSigs(blocks [][]byte) ([]blockSigs, error) {
	var out []blockSigs
	for _, raw := range blocks {
		var b api.Block
		if err := proto.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("bench: crypto bound: decoding a block: %w", err)
		}
		bs := b.GetMetadata().GetSignature()
		bl := blockSigs{block: chainSig{bs.GetSigner(), api.HeaderHash(b.GetHeader()), bs.GetSignature()}}
		for i, rawTx := range b.Transactions {
			tx, code, err := api.DecodeTx(rawTx)
			if err != nil {
				return nil, fmt.Errorf("bench: crypto bound: block %d tx %d: %v: %w", b.GetHeader().GetNumber(), i, code, err)
			}
			sigs := []chainSig{{tx.Creator(), tx.Envelope.Payload, tx.Envelope.Signature}}
			for _, e := range tx.Payload.Endorsements {
				sigs = append(sigs, chainSig{e.Endorser, tx.Payload.ResponsePayload, e.Signature})
			}
			bl.txs = append(bl.txs, sigs)
		}
		out = append(out, bl)
	}
	return out, nil
}

// units splits blocks into the units of work one worker takes at a time:
// with batches, each block's signature alone and its transactions in
// workers shares, as the committer splits them; without, one signature
// each.
func units(blocks []blockSigs, batches bool, workers int) [][]chainSig {
	var out [][]chainSig
	for _, b := range blocks {
		if !batches {
			out = append(out, []chainSig{b.block})
			for _, tx := range b.txs {
				for _, s := range tx {
					out = append(out, []chainSig{s})
				}
			}
			continue
		}
		out = append(out, []chainSig{b.block})
		per := max((len(b.txs)+workers-1)/workers, 1)
		for lo := 0; lo < len(b.txs); lo += per {
			var u []chainSig
			for _, tx := range b.txs[lo:min(lo+per, len(b.txs))] {
				u = append(u, tx...)
			}
			out = append(out, u)
		}
	}
	return out
}

// verifyUnit is the validator's path for one unit: each signer looked up,
// each signature checked at once or, with a batch, deferred into it and
// the batch checked at the end.
func verifyUnit(reg *identity.Registry, u []chainSig, batch *identity.Batch) error {
	if batch != nil {
		batch.Reset()
	}
	for i := range u {
		m, err := reg.Member(u[i].signer)
		if err != nil {
			return err
		}
		msg := identity.NewMessage(u[i].msg)
		if err := m.VerifyBatch(batch, &msg, u[i].sig); err != nil {
			return err
		}
	}
	if batch != nil && !batch.Verify() {
		return fmt.Errorf("a batch of %d signatures failed", len(u))
	}
	return nil
}

// MeasureCryptoBound verifies the signatures of c's workload blocks on
// workers goroutines (GOMAXPROCS when workers ≤ 0), over and over, until at
// least minDuration has passed and every signature was verified at least
// once, first through the nodes' path and then through the stock library
// (Stock). It fails if any signature does not verify.
func MeasureCryptoBound(c *Chain, workers int, minDuration time.Duration) (CryptoBound, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if c.SetupBlocks >= len(c.Blocks) {
		return CryptoBound{}, fmt.Errorf("bench: crypto bound: the chain has %d blocks, all of them setup blocks; want workload blocks", len(c.Blocks))
	}
	blocks, err := chainSigs(c.Blocks[c.SetupBlocks:])
	if err != nil {
		return CryptoBound{}, err
	}
	b, err := measureBound(c, blocks, false, workers, minDuration)
	if err != nil {
		return b, err
	}
	stock, err := measureBound(c, blocks, true, workers, minDuration)
	if err != nil {
		return b, err
	}
	b.Stock = &stock
	return b, nil
}

// measureBound is one of MeasureCryptoBound's two measurements, on a
// fresh registry (stock: with key tables disabled, no batches).
func measureBound(c *Chain, blocks []blockSigs, stock bool, workers int, minDuration time.Duration) (CryptoBound, error) {
	reg, err := identity.NewRegistry(c.Orgs)
	if err != nil {
		return CryptoBound{}, fmt.Errorf("bench: crypto bound: %w", err)
	}
	ed := reg.UsesEd25519()
	path := map[[2]bool]string{{false, false}: "key tables", {false, true}: "crypto/ecdsa",
		{true, false}: "Ed25519 batches", {true, true}: "Ed25519 one by one"}[[2]bool{ed, stock}]
	if stock {
		reg.DisableKeyTables()
	}
	work := units(blocks, ed && !stock, workers)
	var checks []chainSig
	for _, u := range work {
		checks = append(checks, u...)
	}
	// Validate each identity and verify one of its signatures until its
	// key has earned a table, untimed: a validator in steady state finds
	// its few signers in the registry's cache, with their tables.
	seen := make(map[*identity.Member]bool)
	for i := range checks {
		m, err := reg.Member(checks[i].signer)
		if err != nil {
			return CryptoBound{}, fmt.Errorf("bench: crypto bound: %w", err)
		}
		if seen[m] {
			continue
		}
		seen[m] = true
		for range identity.KeyTablePromoteAfter {
			if err := m.Verify(checks[i].msg, checks[i].sig); err != nil {
				return CryptoBound{}, fmt.Errorf("bench: crypto bound: signature %d: %w", i, err)
			}
		}
	}

	var (
		next     atomic.Int64 // index of the next check, modulo n
		stop     atomic.Bool  // minDuration has passed
		failed   atomic.Bool
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
		counts   = make([]int, workers)
		n        = int64(len(work))
	)
	cpu0, err := proccpu.Self()
	if err != nil {
		return CryptoBound{}, err
	}
	start := time.Now()
	timer := time.AfterFunc(minDuration, func() { stop.Store(true) })
	for w := range workers {
		wg.Go(func() {
			var batch *identity.Batch
			if ed && !stock {
				batch = new(identity.Batch)
			}
			done := 0
			for !failed.Load() {
				i := next.Add(1) - 1
				if i >= n && stop.Load() {
					break
				}
				if err := verifyUnit(reg, work[i%n], batch); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("bench: crypto bound: unit %d: %w", i%n, err) })
					failed.Store(true)
					break
				}
				done += len(work[i%n])
			}
			counts[w] = done
		})
	}
	wg.Wait()
	wall := time.Since(start)
	timer.Stop()
	cpu1, err := proccpu.Self()
	if err != nil {
		return CryptoBound{}, err
	}
	if firstErr != nil {
		return CryptoBound{}, firstErr
	}

	b := CryptoBound{Path: path, Workers: workers, SigsPerTx: c.SigsPerTx, Wall: wall, CPU: cpu1 - cpu0}
	for _, k := range counts {
		b.Verifies += k
	}
	b.VerifiesPerSec = float64(b.Verifies) / wall.Seconds()
	b.TxPerSec = b.VerifiesPerSec / b.SigsPerTx
	b.CPUPerTx = time.Duration(float64(b.CPU) / float64(b.Verifies) * b.SigsPerTx)
	return b, nil
}
