package committer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// Membership updates (api.MembersUpdate) change the orgs of the channel
// and their certificate revocation lists in force. They follow the contract definitions'
// pattern (lifecycle.go): the lists are part of the ruleSet, stage 1
// checks a transaction's creator and endorsers against the ruleSet it
// loaded and records its generation, and stage 2, which alone installs a
// new ruleSet after a block with a valid update, verifies again any
// transaction decided under an older generation. A transaction of block
// N is therefore decided under the lists of the blocks below N: an
// update is in force from the block after the one that carries it.
//
// A valid update writes, in the reserved namespace MembersNamespace, each
// CRL it carries under "crl/<org>", each org it adds under "org/<org>"
// (the JSON of its api.MembersOrg), each org it removes under
// "removed/<org>" (the sequence of the update), and the membership
// sequence after it under "seq": its writes follow from its bytes alone,
// so recovery and repair replay it like any transaction, and a restarted
// or snapshot-started peer reads the membership in force from state. An
// added org becomes known to the registry (identity.Registry.AddOrg) when
// stage 2 decides its update; Check keeps its members out of blocks
// decided under an older membership.

// MembersNamespace is the reserved state namespace of the revocation
// lists in force.
const MembersNamespace = "_config"

const (
	membersSeqKey       = "seq"
	membersCRLStart     = "crl/"
	membersCRLEnd       = "crl0" // '/'+1
	membersOrgStart     = "org/"
	membersOrgEnd       = "org0"
	membersRemovedStart = "removed/"
	membersRemovedEnd   = "removed0"
)

// verifyMembers is stage 1 for a membership update: its form, channel,
// the signatures of admins of a majority of the channel's orgs that stay (an admin
// revoked under rs counts for nothing), and each CRL (signed by a CA of
// its org), and each added org's definition (identity.ParseOrgDef). The
// sequence, the CRL numbers and which orgs are members are stage 2's
// (nextMembers).
func verifyMembers(ch *Channel, rs *ruleSet, raw []byte) txResult {
	env, u, err := api.DecodeMembersEnvelope(raw)
	if err != nil {
		return txResult{tx: &api.Tx{Raw: raw}, code: api.TxValidationCode_BAD_PAYLOAD, err: fmt.Errorf("committer: membership transaction: %w", err)}
	}
	id := api.MembersID(raw)
	r := txResult{tx: &api.Tx{Raw: raw, Payload: &api.TxPayload{Header: &api.TxHeader{Channel: u.Channel, TxId: id}},
		Response: &api.ResponsePayload{Rwset: &api.RWSet{}}}}
	if u.Channel != ch.Name {
		return r.fail(api.TxValidationCode_TARGET_CHAIN_NOT_FOUND,
			fmt.Errorf("committer: membership update %s is for channel %q, this is %q", id, u.Channel, ch.Name))
	}
	if err := ch.Registry.AdminMajorityExcept(rs.rev, u.Remove, env.Update, env.Signatures); err != nil {
		return r.fail(api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, fmt.Errorf("committer: membership update %s: %w", id, err))
	}
	change, err := ch.Registry.ParseMembersChange(u)
	if err != nil {
		return r.fail(api.TxValidationCode_INVALID_CONFIG_TRANSACTION, fmt.Errorf("committer: membership update %s: %w", id, err))
	}
	r.tx.Response.Rwset = membersWrites(u)
	r.members = &membersChange{seq: u.Sequence, change: change}
	return r
}

// membersChange is a valid-so-far membership update.
type membersChange struct {
	seq    uint64
	change identity.MembersChange
}

// membersWrites is the state a valid update u writes.
func membersWrites(u *api.MembersUpdate) *api.RWSet {
	ns := &api.NsRWSet{Namespace: MembersNamespace}
	for _, c := range u.CRLs {
		ns.Writes = append(ns.Writes, &api.KVWrite{Key: membersCRLStart + c.Org, Value: c.CRL})
	}
	for _, o := range u.Add {
		def, _ := json.Marshal(o) // []byte and string fields: cannot fail
		ns.Writes = append(ns.Writes, &api.KVWrite{Key: membersOrgStart + o.ID, Value: def})
	}
	for _, o := range u.Remove {
		ns.Writes = append(ns.Writes, &api.KVWrite{Key: membersRemovedStart + o, Value: []byte(strconv.FormatUint(u.Sequence, 10))})
	}
	ns.Writes = append(ns.Writes, &api.KVWrite{Key: membersSeqKey, Value: []byte(strconv.FormatUint(u.Sequence+1, 10))})
	return &api.RWSet{Namespaces: []*api.NsRWSet{ns}}
}

// ErrStaleMembers: a membership update whose sequence is not the number
// of membership updates the channel applied.
var ErrStaleMembers = errors.New("committer: stale membership update")

// nextMembers is stage 2's decision on a block's membership updates, in
// block order: each candidate (still VALID) must have the channel's next
// membership sequence (ErrStaleMembers), CRLs newer than those in force
// (identity.ErrStaleCRL) and add and remove orgs by the rules of
// identity.Registry.NextMembers, or becomes INVALID_CONFIG_TRANSACTION.
// It returns the membership after the block, or nil if the block changes
// none, and makes the orgs a valid update adds known to reg (AddOrg), so
// that stage 1 of the next blocks can check their members. An update
// reads nothing, so MVCC cannot invalidate it after this.
func nextMembers(reg *identity.Registry, rv *identity.Revocations, results []txResult, txs []txWork, log func(string, ...any)) *identity.Revocations {
	var next *identity.Revocations
	for i := range txs {
		m := results[i].members
		if m == nil || txs[i].code != api.TxValidationCode_VALID {
			continue
		}
		cur := rv
		if next != nil {
			cur = next
		}
		var err error
		var n *identity.Revocations
		if m.seq != cur.Sequence() {
			err = fmt.Errorf("%w: sequence %d, the channel has applied %d membership updates (want sequence %d)",
				ErrStaleMembers, m.seq, cur.Sequence(), cur.Sequence())
		} else {
			n, err = reg.NextMembers(cur, m.change)
		}
		for _, d := range m.change.Add {
			if err == nil {
				err = reg.AddOrg(d)
			}
		}
		if err != nil {
			txs[i].code = api.TxValidationCode_INVALID_CONFIG_TRANSACTION
			log("membership update refused", "tx", i, "err", err)
			continue
		}
		next = n
	}
	return next
}

// loadMembers reads the revocation lists in force from state.
func (ch *Channel) loadMembers(db statedb.DB) (*identity.Revocations, error) {
	seq, ok, err := db.Get(MembersNamespace, membersSeqKey)
	if err != nil {
		return nil, fmt.Errorf("committer: reading the membership sequence: %w", err)
	}
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseUint(string(seq.Data), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("committer: committed membership sequence %q: %w", seq.Data, err)
	}
	var added []*identity.OrgDef
	var bad error
	err = db.Scan(MembersNamespace, membersOrgStart, membersOrgEnd, func(key string, v statedb.Value) bool {
		var o api.MembersOrg
		if bad = json.Unmarshal(v.Data, &o); bad == nil {
			var d *identity.OrgDef
			if d, bad = identity.ParseMembersOrg(o); bad == nil {
				bad = ch.Registry.AddOrg(d) // before the CRLs: an added org's CRL names it
				added = append(added, d)
			}
		}
		if bad != nil {
			bad = fmt.Errorf("committer: committed org definition %q: %w", key, bad)
		}
		return bad == nil
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, fmt.Errorf("committer: reading added orgs: %w", err)
	}
	removed := map[string]uint64{}
	err = db.Scan(MembersNamespace, membersRemovedStart, membersRemovedEnd, func(key string, v statedb.Value) bool {
		s, perr := strconv.ParseUint(string(v.Data), 10, 64)
		if perr != nil {
			bad = fmt.Errorf("committer: committed org removal %q: %w", key, perr)
			return false
		}
		removed[key[len(membersRemovedStart):]] = s
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, fmt.Errorf("committer: reading removed orgs: %w", err)
	}
	var crls []*identity.CRL
	err = db.Scan(MembersNamespace, membersCRLStart, membersCRLEnd, func(key string, v statedb.Value) bool {
		c, err := ch.Registry.ParseCRL(key[len(membersCRLStart):], v.Data)
		if err != nil {
			bad = fmt.Errorf("committer: committed CRL %q: %w", key, err)
			return false
		}
		crls = append(crls, c)
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, fmt.Errorf("committer: reading revocation lists: %w", err)
	}
	return identity.NewRevocations(n, crls, added, removed), nil
}

// Revocations returns the revocation lists in force at the committed
// height (nil: none). The committer also sets them on Channel.Registry
// (identity.Registry.SetRevocations) for the node's admission points,
// after a block that changed them is committed and before subscribers
// hear of it.
func (c *Committer) Revocations() *identity.Revocations { return c.ch.Registry.Revocations() }

// OnMembers sets f to be called, in the commit stage, after a committed
// block changed the membership in force (Revocations, set on the
// registry) and before subscribers hear of that block, so a client told
// of a membership update's commit finds the node following it (a peer's
// gateway asks an added org's peers, no longer a removed org's). f reads
// Revocations (the latest; calls may coalesce) and must not wait for the
// committer.
func (c *Committer) OnMembers(f func()) { c.onMembers.Store(&f) }
