package orderer

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
)

// genesis writes block 0 from the configured genesis document on an empty
// store, or checks that the stored block 0 holds exactly that document.
func (o *Orderer) genesis() error {
	doc := o.cfg.Genesis
	if doc == nil {
		return nil
	}
	store := o.cfg.Store
	if store.Height() > 0 {
		b, err := store.Block(0)
		if err != nil {
			return fmt.Errorf("orderer: reading the genesis block: %w", err)
		}
		if len(b.Transactions) == 1 {
			if f, ok := api.GenesisFormatDiffers(b.Transactions[0], doc); ok {
				return fmt.Errorf("%w: this chain was created with transaction format %s and the channel file gives another: "+
					"set format: %s in the channel file (docs/config.md)", ErrBadConfig, f, f)
			}
		}
		if len(b.Transactions) != 1 || !bytes.Equal(b.Transactions[0], doc) {
			return fmt.Errorf("%w: the block store's genesis block holds a different channel config than the one configured (hash %.16x): "+
				"this data directory belongs to another channel", ErrBadConfig, sha256.Sum256(doc))
		}
		return nil
	}
	blk, err := api.BuildBlock(0, nil, [][]byte{doc}, o.cfg.Signer)
	if err != nil {
		return fmt.Errorf("%w: genesis block: %w", ErrFailed, err)
	}
	codes := []byte{byte(api.TxValidationCode_NOT_VALIDATED)}
	blk.Metadata.ValidationCodes = codes
	raw, err := proto.Marshal(blk)
	if err != nil {
		return fmt.Errorf("%w: genesis block: %w", ErrFailed, err)
	}
	entry := ledger.Entry{Number: 0, HeaderHash: api.HeaderHash(blk.Header), Raw: raw, TxIDs: []string{""}, Codes: codes}
	if err := store.Append([]ledger.Entry{entry}); err != nil {
		return fmt.Errorf("%w: writing the genesis block: %w", ErrFailed, err)
	}
	o.cfg.Log.Info("wrote the genesis block", "channel", o.cfg.Channel, "config_hash", fmt.Sprintf("%x", sha256.Sum256(doc)))
	return nil
}
