package orderer

import (
	"bytes"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
)

// seal turns batches into blocks: number, link, data hash, the orderer's
// signature, the encoding. It runs beside the loop, so signing one block
// overlaps cutting the next.
func (o *Orderer) seal(next uint64, prev []byte) {
	defer close(o.sealed)
	for b := range o.cuts {
		if o.sealHook != nil {
			o.sealHook()
		}
		if b.sync != nil { // Raft catch-up: continue the chain after it
			if b.sync.Height > next {
				next, prev = b.sync.Height, b.sync.Hash
			}
			o.sealed <- sealedBlock{sync: b.sync}
			continue
		}
		if o.raft != nil && b.num != next && o.fatal.Load() == nil {
			// The invariant that makes all members' chains identical.
			o.fail(fmt.Errorf("%w: the applied Raft log numbers a block %d, seal expected %d", ErrFailed, b.num, next))
		}
		if o.fatal.Load() == nil { // else drain so the loop never blocks
			if hh, ok := o.sealOne(next, prev, b); ok {
				next, prev = next+1, hh
				continue // persist releases it once durable
			}
		}
		o.sealReleased(1) // no block will reach persist
	}
}

// sealReleased is released for the single-node pipeline; in Raft mode
// the Raft loop counts proposals instead (they are released when applied).
func (o *Orderer) sealReleased(n int) {
	if o.raft == nil {
		o.released(n)
	}
}

// sealOne builds, signs and encodes block next from b, hands it to
// persist and returns its header hash; on failure it records the fatal
// error and returns false.
func (o *Orderer) sealOne(next uint64, prev []byte, b batch) ([]byte, bool) {
	var signer api.Signer // an untyped nil leaves the block unsigned
	if o.ckpt.sign(next, time.Now()) {
		signer = o.cfg.Signer
		o.m.signed.Add(1)
	}
	blk, err := api.BuildBlock(next, prev, b.Txs, signer)
	if err != nil {
		o.fail(fmt.Errorf("%w: sealing block %d: %w", ErrFailed, next, err))
		return nil, false
	}
	codes := bytes.Repeat([]byte{byte(api.TxValidationCode_NOT_VALIDATED)}, len(b.Txs))
	blk.Metadata.ValidationCodes = codes
	raw, err := proto.Marshal(blk)
	if err != nil {
		o.fail(fmt.Errorf("%w: encoding block %d: %w", ErrFailed, next, err))
		return nil, false
	}
	hh := api.HeaderHash(blk.Header)
	n := 0
	for _, tx := range b.Txs {
		n += len(tx)
	}
	o.sealed <- sealedBlock{
		entry:   ledger.Entry{Number: next, HeaderHash: hh, PrevHash: prev, Raw: raw, TxIDs: b.IDs, Codes: codes},
		txBytes: n,
	}
	return hh, true
}
