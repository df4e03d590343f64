package bench

import (
	"crypto/rand"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/proccpu"
)

// CryptoRates are how many signatures this machine creates and verifies
// per second on all its cores, with one algorithm.
type CryptoRates struct {
	Alg          identity.Algorithm
	Workers      int
	SignPerSec   float64
	VerifyPerSec float64
	SignCPU      time.Duration // per signature
	VerifyCPU    time.Duration // per verification
	// StockVerifyPerSec and StockVerifyCPU are verification through the
	// library alone (crypto/ecdsa, or ed25519consensus's single ZIP-215
	// check; no key tables), for the stock bound printed beside the
	// nodes' own; VerifyPerSec is the nodes' path (the client key's
	// table, P-256 or Ed25519, once it has earned one).
	StockVerifyPerSec float64
	StockVerifyCPU    time.Duration
	MessageLength     int
	// Machine is how the machine's cores spent the measurement: rates
	// measured while the hypervisor stole more are lower.
	Machine MachineShare
}

// MeasureCryptoRates signs and then verifies messages of msgLen bytes on
// workers goroutines (0: GOMAXPROCS) for about d each, through the same
// identity code the nodes use.
func MeasureCryptoRates(alg identity.Algorithm, workers int, d time.Duration, msgLen int) (CryptoRates, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ca, err := identity.NewCA("BoundOrg", alg)
	if err != nil {
		return CryptoRates{}, err
	}
	signer, err := ca.Issue("bound", identity.RoleClient, alg)
	if err != nil {
		return CryptoRates{}, err
	}
	orgs := []identity.Org{{ID: "BoundOrg", CACerts: [][]byte{ca.CertDER()}}}
	reg, err := identity.NewRegistry(orgs)
	if err != nil {
		return CryptoRates{}, err
	}
	stockReg, err := identity.NewRegistry(orgs)
	if err != nil {
		return CryptoRates{}, err
	}
	stockReg.DisableKeyTables()
	msg := make([]byte, msgLen)
	rand.Read(msg)
	sig, err := signer.Sign(msg)
	if err != nil {
		return CryptoRates{}, err
	}
	r := CryptoRates{Alg: alg, Workers: workers, MessageLength: msgLen}
	span := startMachineSpan()
	var failed atomic.Bool
	sign := func() {
		if _, err := signer.Sign(msg); err != nil {
			failed.Store(true)
		}
	}
	verifyWith := func(reg *identity.Registry) func() {
		return func() {
			if m, err := reg.Member(signer.Identity()); err != nil || m.Verify(msg, sig) != nil {
				failed.Store(true)
			}
		}
	}
	var signCPU, verifyCPU, stockCPU time.Duration
	if r.SignPerSec, signCPU, err = opRate(workers, d, sign); err != nil {
		return r, err
	}
	if r.VerifyPerSec, verifyCPU, err = opRate(workers, d, verifyWith(reg)); err != nil {
		return r, err
	}
	if r.StockVerifyPerSec, stockCPU, err = opRate(workers, d, verifyWith(stockReg)); err != nil {
		return r, err
	}
	if failed.Load() {
		return r, fmt.Errorf("bench: a signature failed while measuring crypto rates")
	}
	r.SignCPU, r.VerifyCPU, r.StockVerifyCPU = signCPU, verifyCPU, stockCPU
	r.Machine = span.done()
	return r, nil
}

// opRate runs op on workers goroutines for about d and returns operations
// per second and process CPU per operation.
func opRate(workers int, d time.Duration, op func()) (float64, time.Duration, error) {
	cpu0, err := proccpu.Self()
	if err != nil {
		return 0, 0, err
	}
	var n atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < d {
				op()
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	cpu1, err := proccpu.Self()
	if err != nil {
		return 0, 0, err
	}
	ops := n.Load()
	return float64(ops) / wall.Seconds(), (cpu1 - cpu0) / time.Duration(max(ops, 1)), nil
}

// EndToEndBound is the crypto bound of a whole network on this machine:
// the transactions per second its cores could sustain if creating and
// verifying every signature were the only work.
type EndToEndBound struct {
	SignsPerTx    float64
	VerifiesPerTx float64
	TxPerSec      float64 // with the nodes' verification path
	// StockTxPerSec is the bound with the library's verification (no key tables); 0 when
	// the rates have no stock measurement.
	StockTxPerSec float64
}

// NetworkBound counts the signatures of one transaction through a network
// of peerOrgs orgs with one peer each (every org endorses), one orderer, and
// blocks of avgBlock transactions: the client signs the proposal and the
// transaction, each endorser verifies the proposal and signs its
// endorsement, the orderer verifies the creator and signs each block, and
// every peer verifies the creator, the other orgs' endorsements and each
// block's signature. A peer does not check its own endorsement: it
// recognises the signature it made (committer.Channel.Own), as the nodes
// do, so the bound counts what they verify.
func NetworkBound(r CryptoRates, peerOrgs int, avgBlock float64) EndToEndBound {
	orgs := float64(peerOrgs)
	b := EndToEndBound{
		SignsPerTx:    2 + orgs + 1/avgBlock,
		VerifiesPerTx: orgs + 1 + orgs*orgs + orgs/avgBlock,
	}
	b.TxPerSec = 1 / (b.SignsPerTx/r.SignPerSec + b.VerifiesPerTx/r.VerifyPerSec)
	if r.StockVerifyPerSec > 0 {
		b.StockTxPerSec = 1 / (b.SignsPerTx/r.SignPerSec + b.VerifiesPerTx/r.StockVerifyPerSec)
	}
	return b
}

// MeanRates averages two measurements of the same algorithm on the same
// cores, such as one before and one after a load, so that a bound
// compared with the load brackets it in time.
func MeanRates(a, b CryptoRates) CryptoRates {
	m := a
	m.SignPerSec = (a.SignPerSec + b.SignPerSec) / 2
	m.VerifyPerSec = (a.VerifyPerSec + b.VerifyPerSec) / 2
	m.SignCPU = (a.SignCPU + b.SignCPU) / 2
	m.VerifyCPU = (a.VerifyCPU + b.VerifyCPU) / 2
	m.StockVerifyPerSec = (a.StockVerifyPerSec + b.StockVerifyPerSec) / 2
	m.StockVerifyCPU = (a.StockVerifyCPU + b.StockVerifyCPU) / 2
	m.Machine = MachineShare{
		BusyPct:   (a.Machine.BusyPct + b.Machine.BusyPct) / 2,
		IdlePct:   (a.Machine.IdlePct + b.Machine.IdlePct) / 2,
		StealPct:  (a.Machine.StealPct + b.Machine.StealPct) / 2,
		Available: a.Machine.Available && b.Machine.Available,
	}
	return m
}
