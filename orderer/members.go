package orderer

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
)

// Membership updates (api.MembersUpdate: orgs added and removed, per-org
// certificate revocation lists) are ordered like transactions: they change nothing of the
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

// checkMembers checks a membership update against the membership in
// force rv: form, channel, sequence, the admins' signatures (a majority
// of the member orgs; revoked admins and non-members do not count), each
// CRL (signed by a CA of its org, newer than the org's list in force)
// and each org added or removed (identity.Registry.NextMembers). It
// returns the membership after the update and the orgs it adds.
func checkMembers(reg *identity.Registry, channel string, rv *identity.Revocations, raw []byte) (*identity.Revocations, []*identity.OrgDef, error) {
	env, u, err := api.DecodeMembersEnvelope(raw)
	if err != nil {
		return nil, nil, err
	}
	id := api.MembersID(raw)
	switch {
	case u.Channel != channel:
		return nil, nil, fmt.Errorf("%w: membership update %s is for channel %q, this is %q", ErrConfigUpdate, id, u.Channel, channel)
	case u.Sequence != rv.Sequence():
		return nil, nil, fmt.Errorf("%w: membership update %s has sequence %d, the channel has applied %d membership updates (want sequence %d)",
			ErrStaleMembers, id, u.Sequence, rv.Sequence(), rv.Sequence())
	}
	if err := reg.AdminMajorityExcept(rv, u.Remove, env.Update, env.Signatures); err != nil {
		return nil, nil, fmt.Errorf("%w: membership update %s: %w", ErrConfigUpdate, id, err)
	}
	change, err := reg.ParseMembersChange(u)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: membership update %s: %w", ErrConfigUpdate, id, err)
	}
	next, err := reg.NextMembers(rv, change)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: membership update %s: %w", ErrConfigUpdate, id, err)
	}
	return next, change.Add, nil
}

// admitMembers is admission of a membership update (see checkMembers).
func (o *Orderer) admitMembers(raw []byte) (admitted, error) {
	_, _, err := checkMembers(o.cfg.Registry, o.cfg.Channel, o.cfg.Registry.Revocations(), raw)
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

// membersScan is how far the orderer has applied the chain's membership
// updates. Updates apply in block order (each names the sequence of the
// one before), so a block that cannot be read yet — damaged, until
// repairDamaged replaces it — holds back every block above it; those are
// applied when catchUpMembers runs again after the repair.
//
// Invariant: the updates of blocks below next are applied; none above.
type membersScan struct {
	mu   sync.Mutex
	next uint64 // the next block whose membership updates to apply
}

// applyMembers applies the membership updates of blocks just stored, in
// order: each that checks against the lists in force replaces them (one
// that does not is skipped, as the peers' committers mark it invalid).
// Blocks below the watermark were applied already; a block above it
// means the scan is held back by an unreadable block, and waits for it.
// It decodes only blocks whose tx ids name a membership update.
func (o *Orderer) applyMembers(entries []ledger.Entry) {
	o.members.mu.Lock()
	defer o.members.mu.Unlock()
	if b := o.cfg.Store.Base().Height; o.members.next < b {
		o.members.next = b // a Raft snapshot moved the store's base up
	}
	for _, e := range entries {
		if e.Number != o.members.next {
			continue
		}
		for _, id := range e.TxIDs {
			if strings.HasPrefix(id, membersIDPrefix) {
				o.applyMembersBlock(e.Number, e.Raw)
				break
			}
		}
		o.members.next++
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
		next, added, err := checkMembers(reg, o.cfg.Channel, reg.Revocations(), tx)
		for _, d := range added {
			if err == nil {
				err = reg.AddOrg(d) // before the membership that admits its members
			}
		}
		if err != nil {
			o.cfg.Log.Warn("membership update not applied", "block", num, "tx", i, "err", err)
			continue
		}
		reg.SetRevocations(next)
		o.m.membersUpdates.Add(1)
		o.cfg.Log.Info("membership update applied", "block", num, "tx", i, "sequence", next.Sequence())
	}
}

// catchUpMembers applies the membership updates of the stored blocks
// from the watermark up: at start (a scan of the chain, reading every
// stored block once and decoding only those that hold the update's magic)
// and after repairDamaged replaced the blocks that held it back. A block
// it cannot read stops it, with a warning: the revocation lists the
// orderer's admission and TLS checks use then lag until the block is
// repaired (the peers' committers, which read every block, stay the
// authority: docs/membership.md).
func (o *Orderer) catchUpMembers() {
	o.members.mu.Lock()
	defer o.members.mu.Unlock()
	st := o.cfg.Store
	if b := st.Base().Height; o.members.next < b {
		o.members.next = b // updates below a snapshot base are not in the store
	}
	for ; o.members.next < st.Height(); o.members.next++ {
		n := o.members.next
		raw, err := st.RawBlock(n)
		if err != nil {
			o.cfg.Log.Warn("membership updates applied up to a block this orderer cannot read yet; those above it wait for its repair",
				"block", n, "err", err)
			return
		}
		if bytes.Contains(raw, []byte(api.MembersMagic)) {
			o.applyMembersBlock(n, raw)
		}
	}
}
