package orderer

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
)

// Membership updates (api.MembersUpdate: per-org certificate revocation
// lists) are ordered like transactions: they change nothing of the
// ordering service's Raft group. The orderer checks one at its door
// against the lists it has applied (admitMembers) and applies the lists
// of each block it stores that carries a valid one (applyMembers), so its
// admission of transactions (admit) refuses a revoked creator from then
// on, as the peers' committers do from the next block. The peers'
// committers are the authority: the orderer's check is the cheap one
// that keeps a bad update off the chain, and its decision follows the
// same rule (docs/membership.md).

// ErrStaleMembers: a membership update whose sequence is not the number
// of membership updates this orderer has applied.
var ErrStaleMembers = errors.New("orderer: stale membership update")

// checkMembers checks a membership update against the revocation lists
// in force rv: form, channel, sequence, the admins' signatures (revoked
// admins do not count) and each CRL (signed by a CA of its org, newer
// than the org's list in force). It returns the lists after the update.
func checkMembers(reg *identity.Registry, channel string, rv *identity.Revocations, raw []byte) (*identity.Revocations, error) {
	env, u, err := api.DecodeMembersEnvelope(raw)
	if err != nil {
		return nil, err
	}
	id := api.MembersID(raw)
	switch {
	case u.Channel != channel:
		return nil, fmt.Errorf("%w: membership update %s is for channel %q, this is %q", ErrConfigUpdate, id, u.Channel, channel)
	case u.Sequence != rv.Sequence():
		return nil, fmt.Errorf("%w: membership update %s has sequence %d, the channel has applied %d membership updates (want sequence %d)",
			ErrStaleMembers, id, u.Sequence, rv.Sequence(), rv.Sequence())
	}
	if err := reg.AdminMajorityUnder(rv, env.Update, env.Signatures); err != nil {
		return nil, fmt.Errorf("%w: membership update %s: %w", ErrConfigUpdate, id, err)
	}
	crls := make([]*identity.CRL, len(u.CRLs))
	for i, c := range u.CRLs {
		if crls[i], err = reg.ParseCRL(c.Org, c.CRL); err != nil {
			return nil, fmt.Errorf("%w: membership update %s: %w", ErrConfigUpdate, id, err)
		}
	}
	next, err := rv.Next(crls)
	if err != nil {
		return nil, fmt.Errorf("%w: membership update %s: %w", ErrConfigUpdate, id, err)
	}
	return next, nil
}

// admitMembers is admission of a membership update (see checkMembers).
func (o *Orderer) admitMembers(raw []byte) (admitted, error) {
	_, err := checkMembers(o.cfg.Registry, o.cfg.Channel, o.cfg.Registry.Revocations(), raw)
	if errors.Is(err, api.ErrBadConfigUpdate) {
		o.m.refusedMalformed.Add(1)
		return admitted{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err != nil {
		o.m.refusedForbidden.Add(1)
		return admitted{}, fmt.Errorf("%w: %w", ErrForbidden, err)
	}
	return admitted{raw: raw, id: api.MembersID(raw)}, nil
}

// membersIDPrefix starts the tx id of a membership update (api.MembersID);
// an ordinary transaction's id is hex.
const membersIDPrefix = "members-"

// applyMembers applies the membership updates of stored blocks, in
// order: each that checks against the lists in force replaces them (one
// that does not is skipped, as the peers' committers mark it invalid).
// It decodes only blocks whose tx ids name a membership update.
func (o *Orderer) applyMembers(entries []ledger.Entry) {
	for _, e := range entries {
		has := false
		for _, id := range e.TxIDs {
			if strings.HasPrefix(id, membersIDPrefix) {
				has = true
				break
			}
		}
		if has {
			o.applyMembersBlock(e.Number, e.Raw)
		}
	}
}

// applyMembersBlock applies the membership updates of one block.
func (o *Orderer) applyMembersBlock(num uint64, raw []byte) {
	blk, err := api.DecodeBlock(raw)
	if err != nil {
		return // the store holds what was sealed or checked; nothing to apply
	}
	reg := o.cfg.Registry
	for i, tx := range blk.Transactions {
		if !api.IsMembersEnvelope(tx) {
			continue
		}
		next, err := checkMembers(reg, o.cfg.Channel, reg.Revocations(), tx)
		if err != nil {
			o.cfg.Log.Warn("membership update not applied", "block", num, "tx", i, "err", err)
			continue
		}
		reg.SetRevocations(next)
		o.m.membersUpdates.Add(1)
		o.cfg.Log.Info("membership update applied", "block", num, "tx", i, "sequence", next.Sequence())
	}
}

// loadMembers applies the membership updates of the blocks in the store
// at start. It reads every stored block once, looking for the update's
// magic before decoding, so it costs a scan of the chain.
func (o *Orderer) loadMembers() error {
	st := o.cfg.Store
	for n := st.Base().Height; n < st.Height(); n++ {
		raw, err := st.RawBlock(n)
		if err != nil {
			return fmt.Errorf("orderer: reading block %d for membership updates: %w", n, err)
		}
		if bytes.Contains(raw, []byte(api.MembersMagic)) {
			o.applyMembersBlock(n, raw)
		}
	}
	return nil
}
