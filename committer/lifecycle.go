package committer

import (
	"errors"
	"fmt"
	"slices"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/policy"
)

// Contract definitions (contract/lifecycle) change the rules stage 1
// checks endorsements against, while stage 1 runs ahead of stage 2. The
// rules are therefore versioned: a ruleSet has a generation, stage 1
// records the generation it used in each txResult, and stage 2, which
// alone installs a new ruleSet (after a block whose definitions are
// valid), verifies again any transaction whose generation is not the
// current one. Stage 1 of a block finishes before stage 2 starts it, and
// generations only grow, so a transaction of block N is decided under the
// definitions of blocks below N, whatever the timing: the policy in force
// at its block (docs/contracts.md).

// ruleSet is the endorsement rules of one generation of definitions.
type ruleSet struct {
	gen  uint64
	m    map[string]*rule
	defs *lifecycle.Table
	rev  *identity.Revocations // the revocation lists in force (members.go)
}

// newRuleSet builds the rules of table, plus the lifecycle contract's
// (Channel.Lifecycle) when the channel has one.
func (ch *Channel) newRuleSet(gen uint64, table *lifecycle.Table, rev *identity.Revocations) *ruleSet {
	pols := table.Policies()
	m := make(map[string]*rule, len(pols)+1)
	for name, p := range pols {
		m[name] = &rule{pol: p, orgs: p.Orgs()}
	}
	if lp := ch.lifecyclePolicy(rev); lp != nil {
		m[lifecycle.Namespace] = &rule{pol: lp, orgs: lp.Orgs()}
	}
	return &ruleSet{gen: gen, m: m, defs: table, rev: rev}
}

// lifecyclePolicy is the lifecycle policy in force under the membership
// rev (Channel.LifecycleFollows); nil refuses every definition.
func (ch *Channel) lifecyclePolicy(rev *identity.Revocations) *policy.Policy {
	if !ch.LifecycleFollows {
		return ch.Lifecycle
	}
	var orgs []string
	for _, o := range ch.Registry.MembersUnder(rev) {
		if !slices.Contains(ch.Unendorsing, o) {
			orgs = append(orgs, o)
		}
	}
	p, err := lifecycle.DefaultPolicy(orgs)
	if err != nil {
		return nil // no member org left to approve
	}
	return p
}

// loadRules builds generation 0 from the channel's genesis contracts and
// the definitions and revocation lists committed in db.
func (ch *Channel) loadRules(db statedb.DB) (*ruleSet, error) {
	defs, err := ReadDefinitions(db)
	if err != nil {
		return nil, err
	}
	rev, err := ch.loadMembers(db)
	if err != nil {
		return nil, err
	}
	return ch.newRuleSet(0, lifecycle.NewTable(ch.Policies, defs), rev), nil
}

// Scanner is the part of a state that ReadDefinitions needs.
type Scanner interface {
	Scan(ns, start, end string, fn func(key string, v statedb.Value) bool) error
}

// ReadDefinitions reads the committed definitions from state: the
// primary's at start, and a compute node's from the memory node it
// shares with its primary.
func ReadDefinitions(db Scanner) ([]*lifecycle.Definition, error) {
	var defs []*lifecycle.Definition
	var bad error
	err := db.Scan(lifecycle.Namespace, lifecycle.DefPrefix, lifecycle.DefEnd, func(key string, v statedb.Value) bool {
		d, err := lifecycle.Decode(v.Data)
		if err != nil {
			bad = fmt.Errorf("committer: committed definition %q does not decode: %w", key, err)
			return false
		}
		d.At = &api.Version{Block: v.Version.Block, Tx: v.Version.Tx}
		defs = append(defs, d)
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, fmt.Errorf("committer: reading contract definitions: %w", err)
	}
	return defs, nil
}

// checkDefinition is stage 1's check of a lifecycle transaction whose
// creator and endorsements (the lifecycle policy) were verified: the form
// of its writes (lifecycle.CheckWrites).
func checkDefinition(ch *Channel, rs *ruleSet, r txResult) txResult {
	orgs := ch.Registry.MembersUnder(rs.rev) // a policy may name the orgs that are members at its block
	def, _, err := lifecycle.CheckWrites(ch.Name, func(o string) bool { return slices.Contains(orgs, o) }, r.tx.Response.Rwset)
	if err != nil {
		code := api.TxValidationCode_BAD_RWSET
		if errors.Is(err, lifecycle.ErrCodeHash) || errors.Is(err, lifecycle.ErrRuntime) {
			code = api.TxValidationCode_INVALID_CHAINCODE
		}
		return r.fail(code, fmt.Errorf("committer: tx %s: %w", r.tx.ID(), err))
	}
	r.def = def
	return r
}

// nextDefinitions is stage 2's decision on a block's definitions, in
// block order: each candidate (still VALID) must have the next sequence
// of its contract, or becomes CHAINCODE_VERSION_CONFLICT. It returns the
// table after the block, or nil if the block defines nothing. A
// definition transaction reads nothing, so MVCC cannot invalidate it
// after this decision; each one in force gets At, its own version (the
// version of its record once written), which endorsers bind calls to
// (lifecycle.Bind).
func nextDefinitions(table *lifecycle.Table, results []txResult, txs []txWork, log func(string, ...any)) *lifecycle.Table {
	var next *lifecycle.Table
	for i := range txs {
		d := results[i].def
		if d == nil || txs[i].code != api.TxValidationCode_VALID {
			continue
		}
		cur := table
		if next != nil {
			cur = next
		}
		d.At = &api.Version{Block: txs[i].ver.Block, Tx: txs[i].ver.Tx} // d is this block's own, not yet shared
		t, err := cur.Next(d)
		if err != nil {
			txs[i].code = api.TxValidationCode_CHAINCODE_VERSION_CONFLICT
			log("contract definition refused", "contract", d.Name, "tx", i, "err", err)
			continue
		}
		next = t
	}
	return next
}

// Why a definition transaction was refused, as DefinitionsRefused counts.
const (
	RefusedSignatures = "signatures" // the admins' signatures do not satisfy the lifecycle policy
	RefusedSequence   = "sequence"   // not the contract's next sequence (a replay, a downgrade, a skip)
	RefusedCodeHash   = "code_hash"  // the code carried is not the code hash's
	RefusedRuntime    = "runtime"    // an unknown runtime
	RefusedPolicy     = "policy"     // the endorsement policy does not parse or names an org not of the channel
	RefusedMalformed  = "malformed"  // any other breach of the definition's form or of its writes
	RefusedOther      = "other"      // refused before it was read as a definition (creator, tx id, form)
)

// refusedDefinition returns why a definition transaction (one of the
// lifecycle namespace) got its final code, or "" if it is none or VALID.
func refusedDefinition(r txResult, code api.TxValidationCode) string {
	if code == api.TxValidationCode_VALID || r.tx == nil || r.tx.Payload.GetContract() != lifecycle.Namespace {
		return ""
	}
	switch {
	case code == api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE:
		return RefusedSignatures
	case code == api.TxValidationCode_CHAINCODE_VERSION_CONFLICT, errors.Is(r.err, lifecycle.ErrSequence):
		return RefusedSequence
	case errors.Is(r.err, lifecycle.ErrCodeHash):
		return RefusedCodeHash
	case errors.Is(r.err, lifecycle.ErrRuntime):
		return RefusedRuntime
	case errors.Is(r.err, lifecycle.ErrPolicy):
		return RefusedPolicy
	case errors.Is(r.err, lifecycle.ErrMalformed):
		return RefusedMalformed
	}
	return RefusedOther
}

// Definitions returns the contract definitions in force at the
// committed height: what endorsers should run. It changes (a new
// pointer) only when a committed block defined a contract.
func (c *Committer) Definitions() *lifecycle.Table { return c.committedDefs.Load() }

// OnDefinitions sets f to be called, in the commit stage, after a
// committed block changed the definitions and before subscribers hear of
// that block, so a client told of a definition's commit finds it in force
// on this peer. f reads Definitions (the latest; calls may coalesce) and
// must not wait for the committer.
func (c *Committer) OnDefinitions(f func()) { c.onDefs.Store(&f) }
