package endorser

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/identity"
)

// admit runs every check of a signed proposal before simulation, cheapest
// first: decoding, header, channel, creator, expiry, tx id (a hash), the
// signature (the one costly check, so made only for a proposal that is
// otherwise well formed), the replay lookup (I/O, only for a proposal the
// creator really signed), and the contract, in set. A proposal refused
// only for its contract is returned with the error.
func (e *Endorser) admit(set *contractSet, sp *api.SignedProposal) (*api.Proposal, *identity.Member, contract.Contract, error) {
	if sp == nil || len(sp.Proposal) == 0 {
		return nil, nil, nil, refuse(ErrBadProposal, nil, "signed proposal has no proposal bytes")
	}
	p := new(api.Proposal)
	if err := proto.Unmarshal(sp.Proposal, p); err != nil {
		return nil, nil, nil, refuse(ErrBadProposal, err, fmt.Sprintf("proposal of %d bytes does not decode: %v", len(sp.Proposal), err))
	}
	h := p.Header
	switch {
	case h == nil:
		return nil, nil, nil, refuse(ErrBadProposal, nil, "proposal has no header, expected channel, tx id and creator")
	case h.Creator == nil:
		return nil, nil, nil, refuse(ErrBadProposal, nil, fmt.Sprintf("proposal %q has no creator identity", h.TxId))
	case len(h.Nonce) == 0:
		return nil, nil, nil, refuse(ErrBadProposal, nil, fmt.Sprintf("proposal %q has an empty nonce, expected random bytes", h.TxId))
	}
	if err := e.checkChannel(h); err != nil {
		return nil, nil, nil, err
	}
	m, err := e.checkCreator(h)
	if err != nil {
		return nil, nil, nil, err
	}
	if want := api.TxID(h.Nonce, h.Creator); h.TxId != want {
		return nil, nil, nil, refuse(ErrBadTxID, nil, fmt.Sprintf("tx id %q, expected %s = hex(SHA-256(nonce || org || 0 || cert))", h.TxId, want))
	}
	if err := m.Verify(sp.Proposal, sp.Signature); err != nil {
		return nil, nil, nil, refuse(ErrBadSignature, err, fmt.Sprintf("proposal %s: %v", h.TxId, err))
	}
	used, err := e.seen(h.TxId)
	if err != nil {
		return nil, nil, nil, refuse(ErrInternal, err, fmt.Sprintf("looking up tx id %s: %v", h.TxId, err))
	}
	if used {
		return nil, nil, nil, refuse(ErrDuplicateTxID, nil, fmt.Sprintf("tx id %s is already used; build a new proposal with a new nonce", h.TxId))
	}
	c, err := e.lookup(set, p)
	if err != nil {
		return p, nil, nil, err
	}
	return p, m, c, nil
}

func (e *Endorser) checkChannel(h *api.TxHeader) error {
	if h.Channel != e.channel {
		return refuse(ErrWrongChannel, nil, fmt.Sprintf("proposal %q is for channel %q, this peer endorses for channel %q", h.TxId, h.Channel, e.channel))
	}
	return nil
}

// checkCreator validates the creator: a member of a known org, not
// revoked by the lists in force at the peer's committed height, with role
// client or admin, whose certificate has not expired by e.clock().
func (e *Endorser) checkCreator(h *api.TxHeader) (*identity.Member, error) {
	m, err := e.reg.Member(h.Creator)
	if err != nil {
		return nil, refuse(ErrBadCreator, err, fmt.Sprintf("creator of proposal %q: %v", h.TxId, err))
	}
	if err := e.reg.Revoked(m); err != nil {
		return nil, refuse(ErrBadCreator, err, fmt.Sprintf("creator of proposal %q: %v", h.TxId, err))
	}
	if m.Role != identity.RoleClient && m.Role != identity.RoleAdmin {
		return nil, refuse(ErrBadCreator, nil, fmt.Sprintf("creator %q of org %q has role %s, expected client or admin", m.Name, m.Org, m.Role))
	}
	if now := e.clock(); now.After(m.NotAfter) {
		return nil, refuse(ErrExpired, nil, fmt.Sprintf("certificate of %s %q of org %q expired at %s, it is now %s",
			m.Role, m.Name, m.Org, m.NotAfter.UTC().Format("2006-01-02T15:04:05Z"), now.UTC().Format("2006-01-02T15:04:05Z")))
	}
	return m, nil
}

func (e *Endorser) lookup(set *contractSet, p *api.Proposal) (contract.Contract, error) {
	c, ok := set.m[p.Contract]
	if !ok {
		return nil, refuse(ErrUnknownContract, nil, fmt.Sprintf("contract %q is not defined on this peer for channel %q, expected one of: %s",
			p.Contract, e.channel, set.names))
	}
	return c, nil
}
