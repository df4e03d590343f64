package committer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

// Stage 1 spread over compute nodes (FlexChain's V1 on the compute tier).
//
// A Remote checks the signatures of delivered transactions elsewhere (a
// compute node of this peer, node/computepool.go) and answers a Verdict
// per transaction: which signatures it checked and which of those hold.
// The committer then runs stage 1 as always, taking a signature the
// verdict calls valid as valid and checking every other itself. So:
//
//   - Codes are the ones stage 1 decides alone whenever the remote is
//     honest: it checks each signature with the same rule
//     (identity.Member.VerifyMessage) over the same bytes and the same
//     certificate's key (CheckSignatures).
//   - A remote can spare work, never refuse it: a signature it calls
//     invalid, or did not check, is checked here. Trusting its "valid" is
//     the trust the org already gives its compute nodes, which endorse
//     under its peers' certificates.
//   - Membership, roles, revocation, binding and policy stay here: a
//     verdict is about the math of one signature only.
//   - While a remote is attached, the local workers leave transactions to
//     the remotes (FlexChain's primary leaves V1 to its compute tier) and
//     keep the blocks' own checks (one orderer signature each). A remote
//     that fails or does not answer within remoteTimeout costs one
//     request's delay: its transactions are checked here, and for
//     remoteBackoff (doubling while it keeps failing) its workers check
//     here whatever they take, without asking it. When the last remote
//     leaves, what was queued for the remotes is checked here.

// Verdict covers one transaction's signatures by bit: creatorBit for the
// creator's signature over the envelope's payload, endorsementBit(k) for
// endorsement k's over the response payload (k < maxVerdictEndorsements).
// Valid counts only where Checked is set too.
type Verdict struct{ Checked, Valid uint64 }

const (
	creatorBit = 0
	// maxVerdictEndorsements is how many endorsements a verdict covers;
	// any beyond are checked here.
	maxVerdictEndorsements = 63
)

func endorsementBit(k int) int {
	if k >= maxVerdictEndorsements {
		return 64 // no such bit: holds reports false
	}
	return 1 + k
}

// holds reports whether v calls signature bit valid.
func (v Verdict) holds(bit int) bool {
	return bit < 64 && v.Checked&v.Valid&(1<<bit) != 0
}

// Remote is a verifier of signatures for stage 1 (see above).
type Remote interface {
	// CheckSignatures returns one verdict per transaction of txs, in
	// order, or an error (then none is used).
	CheckSignatures(ctx context.Context, txs [][]byte) ([]Verdict, error)
}

const (
	// remoteMaxTxs is the most transactions one request carries (the
	// Verifier service's limit, api.SignatureCheckRequest).
	remoteMaxTxs = 1024
	// remoteBatch is how many transactions a remote worker gathers from
	// the queue before it asks (fewer when the queue holds fewer).
	remoteBatch = 256
	// remoteInFlight is how many requests one remote has outstanding: one
	// is being answered while the next is sent and the last completed.
	remoteInFlight = 2
	remoteTimeout  = 2 * time.Second
	// remoteBackoff is how long a remote's workers check here, without
	// asking it, after a failed request; it doubles with each further
	// failure in a row, up to remoteMaxBackoff.
	remoteBackoff    = time.Second
	remoteMaxBackoff = 30 * time.Second
	// remoteMaxBytes bounds a request's transactions so that it fits a
	// compute node's receive limit (api.MaxRequestMessage, one largest
	// transaction and some). A job that does not fit is checked here.
	remoteMaxBytes = api.MaxTxBytes
)

// ErrTooManyTxs refuses a signature check request over remoteMaxTxs.
var ErrTooManyTxs = errors.New("committer: too many transactions in one signature check")

// CheckSignatures is a Remote's work: the verdicts of txs (envelope bytes
// as delivered on channel) under reg. A signature is checked when its
// transaction decodes far enough and its signer is a member reg knows;
// config and membership transactions, and transactions of another
// channel, get empty verdicts. It never fails on bad input: an unusable
// transaction gets an empty verdict, which leaves its checks to the
// primary. It uses up to GOMAXPROCS goroutines, each checking its share's
// Ed25519 signatures as one batch as stage 1 does (verifyTxs): if the
// batch fails, its share is checked again one by one, so every bit is a
// single check's answer.
func CheckSignatures(reg *identity.Registry, channel string, txs [][]byte) ([]Verdict, error) {
	if len(txs) > remoteMaxTxs {
		return nil, fmt.Errorf("%w: %d, want at most %d", ErrTooManyTxs, len(txs), remoteMaxTxs)
	}
	out := make([]Verdict, len(txs))
	workers := min(runtime.GOMAXPROCS(0), len(txs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var batch identity.Batch
			for i := w; i < len(txs); i += workers {
				out[i] = checkSignatures(reg, channel, txs[i], &batch)
			}
			if batch.Verify() {
				return
			}
			for i := w; i < len(txs); i += workers {
				out[i] = checkSignatures(reg, channel, txs[i], nil)
			}
		}()
	}
	wg.Wait()
	return out, nil
}

// checkSignatures is one transaction's verdict; with a batch, its Ed25519
// signatures are deferred into it and their bits hold only if it verifies.
func checkSignatures(reg *identity.Registry, channel string, raw []byte, batch *identity.Batch) Verdict {
	var v Verdict
	if api.IsConfigEnvelope(raw) || api.IsMembersEnvelope(raw) {
		return v
	}
	tx, code, err := api.DecodeTx(raw)
	if err != nil && !api.TxIDCounts(code) || tx == nil || tx.Payload == nil || tx.Payload.Header == nil {
		return v
	}
	if tx.Payload.Header.Channel != channel {
		return v
	}
	check := func(bit int, id *api.Identity, msg *identity.Message, sig []byte) {
		m, err := reg.Member(id)
		if err != nil {
			return
		}
		v.Checked |= 1 << bit
		if m.VerifyBatch(batch, msg, sig) == nil {
			v.Valid |= 1 << bit
		}
	}
	if tx.Envelope != nil {
		payload := identity.NewMessage(tx.Envelope.Payload)
		check(creatorBit, tx.Payload.Header.Creator, &payload, tx.Envelope.Signature)
	}
	if err != nil || tx.Payload.ResponsePayload == nil {
		return v // signed, but the rest is malformed: stage 1 stops there
	}
	resp := identity.NewMessage(tx.Payload.ResponsePayload)
	for k, e := range tx.Payload.Endorsements {
		if k == maxVerdictEndorsements {
			break
		}
		if e.GetEndorser() != nil {
			check(endorsementBit(k), e.GetEndorser(), &resp, e.Signature)
		}
	}
	return v
}

// remotes are the Remotes stage 1 uses, each with remoteInFlight workers.
//
// Invariant: a transaction job goes to remoteJobs only while n > 0, decided
// and sent under mu (queueTxJobs); n drops under mu too, so once a remove
// has made it 0 nothing more enters remoteJobs, and the workers of the
// last remote drain it before they exit.
type remotes struct {
	mu     sync.Mutex
	closed bool
	n      int
	wg     sync.WaitGroup
}

// queueTxJobs queues block b's transaction jobs: for the remotes while
// any is attached, else for the local workers.
func (c *Committer) queueTxJobs(b *blockWork) {
	n, per := len(b.blk.Transactions), b.per
	c.remote.mu.Lock()
	defer c.remote.mu.Unlock()
	q := c.jobs
	if c.remote.n > 0 {
		// A remote worker gathers jobs into one request: fewer, larger
		// ones. None of b's jobs is queued yet, so its count may change.
		q = c.remoteJobs
		b.left.Add(int32((n+remoteBatch-1)/remoteBatch - (n+per-1)/per))
		per = remoteBatch
	}
	for lo := 0; lo < n; lo += per {
		q <- job{b, lo, min(lo+per, n)}
	}
}

// AddRemote lets stage 1 ask r (named name in logs) to check signatures
// until the returned function is called or the committer closes. The
// remotes' workers share one queue, so a fast remote takes more work and
// a slow one less.
func (c *Committer) AddRemote(name string, r Remote) (remove func()) {
	stop := make(chan struct{})
	c.remote.mu.Lock()
	if c.remote.closed {
		c.remote.mu.Unlock()
		return func() {}
	}
	c.remote.n++
	c.remote.wg.Add(remoteInFlight)
	c.remote.mu.Unlock()
	for range remoteInFlight {
		go c.remoteLoop(name, r, stop)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			c.remote.mu.Lock()
			c.remote.n--
			c.remote.mu.Unlock()
			close(stop)
		})
	}
}

// closeRemotes stops the remote workers once every block is done.
func (c *Committer) closeRemotes() {
	c.remote.mu.Lock()
	c.remote.closed = true
	c.remote.mu.Unlock()
	close(c.remoteDone)
	c.remote.wg.Wait()
}

// drainRemoteJobs runs here what is queued for the remotes, once none is
// attached (see remotes).
func (c *Committer) drainRemoteJobs(batch *identity.Batch) {
	c.remote.mu.Lock()
	last := c.remote.n == 0
	c.remote.mu.Unlock()
	for last {
		select {
		case j := <-c.remoteJobs:
			c.runJob(j, batch, nil)
		default:
			return
		}
	}
}

// remoteLoop is one remote worker: it gathers up to remoteBatch
// transactions' jobs from remoteJobs, asks r for their verdicts and
// finishes the jobs with them (a job too large for one request it runs
// here); on an error it finishes them without, then rests remoteBackoff.
func (c *Committer) remoteLoop(name string, r Remote, stop <-chan struct{}) {
	defer c.remote.wg.Done()
	var batch identity.Batch
	var jobs []job
	var asked []bool // jobs[i]'s transactions are in the request
	var txs [][]byte
	backoff := remoteBackoff
	for {
		var first job
		select {
		case <-stop:
			c.drainRemoteJobs(&batch)
			return
		case <-c.remoteDone:
			return
		case first = <-c.remoteJobs:
		}
		jobs, asked, txs = jobs[:0], asked[:0], txs[:0]
		size := 0
		// add takes j, and its transactions into the request while they
		// fit; a block's own job and a job too large are run here.
		add := func(j job) {
			in := j.lo >= 0 && len(txs)+j.hi-j.lo <= remoteMaxTxs
			n := 0
			for _, raw := range j.b.blk.Transactions[max(j.lo, 0):max(j.hi, 0)] {
				n += len(raw)
			}
			in = in && size+n <= remoteMaxBytes
			if in {
				txs = append(txs, j.b.blk.Transactions[j.lo:j.hi]...)
				size += n
			}
			jobs, asked = append(jobs, j), append(asked, in)
		}
		add(first)
	gather:
		for len(txs) < remoteBatch {
			select {
			case j := <-c.remoteJobs:
				add(j)
			default:
				break gather
			}
		}
		var vs []Verdict
		var err error
		if len(txs) > 0 {
			if vs, err = c.ask(r, stop, txs); err != nil {
				c.metrics.remoteFailed.Add(1)
				c.log.Warn("compute node's signature check failed; checking here", "remote", name, "txs", len(txs), "for", backoff, "err", err)
				vs = nil
			} else {
				c.metrics.remoteTxs.Add(uint64(len(txs)))
				backoff = remoteBackoff
			}
		}
		off := 0
		for i, j := range jobs {
			var jv []Verdict
			if asked[i] {
				if vs != nil {
					jv = vs[off : off+j.hi-j.lo]
				}
				off += j.hi - j.lo
			}
			c.runJob(j, &batch, jv)
		}
		if err != nil {
			if !c.checkHere(stop, &batch, backoff) {
				return
			}
			backoff = min(2*backoff, remoteMaxBackoff)
		}
	}
}

// checkHere is a failed remote's backoff: for d its worker checks here the
// jobs it takes. It returns false when the worker is to exit (its remote
// left, having drained what was queued if it was the last, or the
// committer closed).
func (c *Committer) checkHere(stop <-chan struct{}, batch *identity.Batch, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			c.drainRemoteJobs(batch)
			return false
		case <-c.remoteDone:
			return false
		case <-t.C:
			return true
		case j := <-c.remoteJobs:
			c.runJob(j, batch, nil)
		}
	}
}

// ask calls r with remoteTimeout, cancelled early by stop or Close, and
// checks that it answered one verdict per transaction.
func (c *Committer) ask(r Remote, stop <-chan struct{}, txs [][]byte) ([]Verdict, error) {
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-c.stopping:
		case <-ctx.Done():
		}
		cancel()
	}()
	vs, err := r.CheckSignatures(ctx, txs)
	if err != nil {
		return nil, err
	}
	if len(vs) != len(txs) {
		return nil, fmt.Errorf("committer: %d verdicts for %d transactions", len(vs), len(txs))
	}
	return vs, nil
}
