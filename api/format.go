package api

import (
	"bytes"
	"errors"
	"fmt"
)

// Format is a channel's transaction format. It is fixed in the channel's
// genesis document, so every node validates a chain by the rules it was
// written under: a block never changes meaning under a peer that is
// upgraded, or under one that replays the chain from block 0.
type Format int

const (
	// Format1 is the format of chains created before endorsements were
	// bound: a response payload names no channel and no tx id, so an
	// endorsement could be wrapped into another transaction (a replay).
	// Only for chains that already exist; never choose it for a new one.
	Format1 Format = 1
	// Format2 binds every endorsement to one transaction: the response
	// payload the endorsers sign names the transaction's channel and tx id,
	// and a transaction whose header does not carry the same two is
	// refused (INVALID_ENDORSER_TRANSACTION). The zero Format means
	// Format2.
	Format2 Format = 2
	// FormatLatest is the format of new channels.
	FormatLatest = Format2
)

// ErrUnboundEndorsement: a transaction carries a response payload (and so
// endorsements) made for another transaction or channel.
var ErrUnboundEndorsement = errors.New("api: endorsement bound to another transaction")

// Valid reports whether f is a known format (zero counts as Format2).
func (f Format) Valid() bool { return f == 0 || f == Format1 || f == Format2 }

// String is "1" or "2".
func (f Format) String() string {
	if f == 0 {
		f = Format2
	}
	return fmt.Sprint(int(f))
}

// CheckBinding reports whether t's response payload, which its endorsers
// signed, was made for t: under Format2 it must name t's channel and tx id.
// The tx id is SHA-256 over the nonce and the creator (TxID), which
// DecodeTx checked, so the endorsement is then bound to one creator, one
// nonce and one channel; a tx id commits at most once, so it is used at
// most once. It costs two string comparisons: the orderer and the gateway
// run it at their door, the committer on every transaction. t must have
// decoded without error (DecodeTx).
func (f Format) CheckBinding(t *Tx) error {
	if f == Format1 {
		return nil
	}
	h, r := t.Payload.Header, t.Response
	if r.TxId == h.TxId && r.Channel == h.Channel {
		return nil
	}
	if r.TxId == "" && r.Channel == "" {
		return fmt.Errorf("%w: tx %s on channel %q carries a response that names no tx id or channel (a format 1 endorsement); "+
			"channel %q has transaction format %s: endorse the proposal again on peers of this version",
			ErrUnboundEndorsement, h.TxId, h.Channel, h.Channel, f)
	}
	return fmt.Errorf("%w: tx %s on channel %q carries a response its endorsers signed for tx %s on channel %q; "+
		"an endorsement is valid only for the proposal it answered: propose and endorse this transaction itself",
		ErrUnboundEndorsement, h.TxId, h.Channel, r.TxId, r.Channel)
}

// GenesisName is the name of format f in a channel's genesis document
// (node.ChannelConfig.Genesis): "strand-channel-v1" names the documents
// written before formats existed, whose hashes format 1 keeps.
func (f Format) GenesisName() string {
	if f == Format1 {
		return "strand-channel-v1"
	}
	return "strand-channel-v2"
}

// GenesisFormatDiffers reports whether stored, a chain's genesis document,
// is the configured one but for its transaction format, and that format:
// the node that finds its block 0 does not match can then say which
// format to configure instead of naming only a hash.
func GenesisFormatDiffers(stored, configured []byte) (Format, bool) {
	for _, have := range []Format{Format1, Format2} {
		mark := []byte(`"Format":"` + have.GenesisName() + `"`)
		if !bytes.Contains(configured, mark) {
			continue
		}
		for _, f := range []Format{Format1, Format2} {
			if f != have && bytes.Equal(stored, bytes.Replace(configured, mark, []byte(`"Format":"`+f.GenesisName()+`"`), 1)) {
				return f, true
			}
		}
	}
	return 0, false
}
