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
// It measures two bounds one after the other: the nodes' path (precomputed
// tables for known P-256 keys, identity/p256), which ratios use, and the
// stock path (crypto/ecdsa for every signature), printed beside it so that
// what the tables bought is visible and a ratio never hides it.

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
	Workers        int
	SigsPerTx      float64
	Verifies       int
	Wall           time.Duration
	CPU            time.Duration // process user+system CPU during the measurement
	VerifiesPerSec float64
	TxPerSec       float64       // VerifiesPerSec / SigsPerTx
	CPUPerTx       time.Duration // CPU / Verifies × SigsPerTx: verification CPU of one tx
	// Stock is the same measurement through crypto/ecdsa alone (no key
	// tables); nil when not measured.
	Stock *CryptoBound
}

func (b CryptoBound) String() string {
	s := fmt.Sprintf("crypto bound (nodes' path, key tables): %d workers, %d verifies in %v (CPU %v): %.0f verifies/s, %.0f tx/s at %.2f sigs/tx, %v CPU/tx",
		b.Workers, b.Verifies, b.Wall.Round(time.Millisecond), b.CPU.Round(time.Millisecond),
		b.VerifiesPerSec, b.TxPerSec, b.SigsPerTx, b.CPUPerTx.Round(100*time.Nanosecond))
	if st := b.Stock; st != nil {
		s += fmt.Sprintf("; stock crypto/ecdsa: %.0f verifies/s, %.0f tx/s, %v CPU/tx (tables %.2fx)",
			st.VerifiesPerSec, st.TxPerSec, st.CPUPerTx.Round(100*time.Nanosecond), b.TxPerSec/st.TxPerSec)
	}
	return s
}

// chainSig is one signature a validator verifies: signer, exact bytes, signature.
type chainSig struct {
	signer *api.Identity
	msg    []byte
	sig    []byte
}

// chainSigs decodes blocks and returns every signature in them.
func chainSigs(blocks [][]byte) ([]chainSig, error) {
	var checks []chainSig
	for _, raw := range blocks {
		var b api.Block
		if err := proto.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("bench: crypto bound: decoding a block: %w", err)
		}
		bs := b.GetMetadata().GetSignature()
		checks = append(checks, chainSig{bs.GetSigner(), api.HeaderHash(b.GetHeader()), bs.GetSignature()})
		for i, rawTx := range b.Transactions {
			tx, code, err := api.DecodeTx(rawTx)
			if err != nil {
				return nil, fmt.Errorf("bench: crypto bound: block %d tx %d: %v: %w", b.GetHeader().GetNumber(), i, code, err)
			}
			checks = append(checks, chainSig{tx.Creator(), tx.Envelope.Payload, tx.Envelope.Signature})
			for _, e := range tx.Payload.Endorsements {
				checks = append(checks, chainSig{e.Endorser, tx.Payload.ResponsePayload, e.Signature})
			}
		}
	}
	return checks, nil
}

// verifyChainSig is the validator's path for one signature.
func verifyChainSig(reg *identity.Registry, c *chainSig) error {
	m, err := reg.Member(c.signer)
	if err != nil {
		return err
	}
	return m.Verify(c.msg, c.sig)
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
	checks, err := chainSigs(c.Blocks[c.SetupBlocks:])
	if err != nil {
		return CryptoBound{}, err
	}
	b, err := measureBound(c, checks, false, workers, minDuration)
	if err != nil {
		return b, err
	}
	stock, err := measureBound(c, checks, true, workers, minDuration)
	if err != nil {
		return b, err
	}
	b.Stock = &stock
	return b, nil
}

// measureBound is one of MeasureCryptoBound's two measurements, on a
// fresh registry (stock: with key tables disabled).
func measureBound(c *Chain, checks []chainSig, stock bool, workers int, minDuration time.Duration) (CryptoBound, error) {
	reg, err := identity.NewRegistry(c.Orgs)
	if err != nil {
		return CryptoBound{}, fmt.Errorf("bench: crypto bound: %w", err)
	}
	if stock {
		reg.DisableKeyTables()
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
		n        = int64(len(checks))
	)
	cpu0, err := proccpu.Self()
	if err != nil {
		return CryptoBound{}, err
	}
	start := time.Now()
	timer := time.AfterFunc(minDuration, func() { stop.Store(true) })
	for w := range workers {
		wg.Go(func() {
			done := 0
			for !failed.Load() {
				i := next.Add(1) - 1
				if i >= n && stop.Load() {
					break
				}
				if err := verifyChainSig(reg, &checks[i%n]); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("bench: crypto bound: signature %d: %w", i%n, err) })
					failed.Store(true)
					break
				}
				done++
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

	b := CryptoBound{Workers: workers, SigsPerTx: c.SigsPerTx, Wall: wall, CPU: cpu1 - cpu0}
	for _, k := range counts {
		b.Verifies += k
	}
	b.VerifiesPerSec = float64(b.Verifies) / wall.Seconds()
	b.TxPerSec = b.VerifiesPerSec / b.SigsPerTx
	b.CPUPerTx = time.Duration(float64(b.CPU) / float64(b.Verifies) * b.SigsPerTx)
	return b, nil
}
