package committer

import (
	"bytes"
	"fmt"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/policy"
)

// maxEndorsements is the most endorsements of one transaction considered by
// the policy (policy evaluation tracks signers in a 64-bit mask).
const maxEndorsements = 64

// txResult is stage 1's verdict on one transaction.
type txResult struct {
	tx   *api.Tx
	code api.TxValidationCode
	err  error
	gen  uint64                // the ruleSet generation it was verified under
	def  *lifecycle.Definition // a valid-so-far definition transaction's definition
	// members is a valid-so-far membership update's change.
	members *membersChange
}

// verifyTx is stage 1 for one transaction, every signature checked one
// by one: checkTx without a batch or a verdict.
func verifyTx(ch *Channel, rs *ruleSet, raw []byte) txResult {
	return checkTx(ch, rs, raw, nil, Verdict{})
}

// verifyTxs is stage 1 for transactions txs, into results: every Ed25519
// signature that needs checking goes into batch, which is checked once at
// the end; if it fails, every transaction is checked again one by one.
//
// Why the codes are exactly verifyTx's: checkTx with a batch takes the
// path verifyTx takes when every deferred signature is valid. The batch
// passes when every deferred signature passes its single check (the two
// follow one rule, identity's ZIP-215), and then the results stand; if
// any does not, the batch fails (but with probability about 2^-125) and
// verifyTx decides them all. A signature that fails what can be checked
// alone (length, encodings) fails at once, as it does in verifyTx.
//
// vs, when not nil, holds a verdict per transaction (a compute node's,
// remote.go): a signature it calls valid is taken as valid unchecked.
func verifyTxs(ch *Channel, rs *ruleSet, txs [][]byte, results []txResult, batch *identity.Batch, vs []Verdict) {
	batch.Reset()
	for i, raw := range txs {
		var v Verdict
		if vs != nil {
			v = vs[i]
		}
		results[i] = checkTx(ch, rs, raw, batch, v)
	}
	if batch.Verify() {
		return
	}
	for i, raw := range txs {
		results[i] = verifyTx(ch, rs, raw)
	}
}

// checkTx is stage 1 for one transaction: structure, channel, creator,
// creator signature, the endorsed response's binding to this transaction
// (channel and tx id, api.Format.CheckBinding), contract, endorsements,
// policy. It needs no state.
//
// The creator's signature is checked as soon as the header is sound, even
// when the rest of the payload is malformed, so that whether a transaction
// claimed its tx id follows from its code alone (api.TxIDCounts).
//
// With a batch, its Ed25519 signatures are deferred into it
// (identity.Member.VerifyBatch): the result holds only if batch.Verify()
// returns true (verifyTxs). A signature v calls valid is not checked; every
// other is (Verdict).
func checkTx(ch *Channel, rs *ruleSet, raw []byte, batch *identity.Batch, v Verdict) txResult {
	if api.IsConfigEnvelope(raw) {
		r := verifyConfig(ch, rs, raw)
		r.gen = rs.gen
		return r
	}
	if api.IsMembersEnvelope(raw) {
		r := verifyMembers(ch, rs, raw)
		r.gen = rs.gen
		return r
	}
	tx, code, err := api.DecodeTx(raw)
	r := txResult{tx: tx, code: code, err: err, gen: rs.gen}
	if err != nil && !api.TxIDCounts(code) {
		return r // the header itself is unusable
	}
	hdr := tx.Payload.Header
	if hdr.Channel != ch.Name {
		return r.fail(api.TxValidationCode_TARGET_CHAIN_NOT_FOUND,
			fmt.Errorf("committer: tx %s is for channel %q, this is %q", hdr.TxId, hdr.Channel, ch.Name))
	}
	creator, err := ch.Registry.Member(hdr.Creator)
	if err != nil {
		return r.fail(api.TxValidationCode_BAD_CREATOR_SIGNATURE, fmt.Errorf("committer: tx %s creator: %w", hdr.TxId, err))
	}
	if err := rs.rev.Check(creator); err != nil { // Fabric's MSP refuses a revoked creator alike
		return r.fail(api.TxValidationCode_BAD_CREATOR_SIGNATURE, fmt.Errorf("committer: tx %s creator: %w", hdr.TxId, err))
	}
	if creator.Role != identity.RoleClient && creator.Role != identity.RoleAdmin {
		return r.fail(api.TxValidationCode_BAD_CREATOR_SIGNATURE,
			fmt.Errorf("committer: tx %s creator %s has role %s; only client or admin may submit", hdr.TxId, creator.Name, creator.Role))
	}
	payload := identity.NewMessage(tx.Envelope.Payload)
	if !v.holds(creatorBit) {
		if err := creator.VerifyBatch(batch, &payload, tx.Envelope.Signature); err != nil {
			return r.fail(api.TxValidationCode_BAD_CREATOR_SIGNATURE, fmt.Errorf("committer: tx %s: %w", hdr.TxId, err))
		}
	}
	if r.err != nil {
		return r // signed, but the response or read/write set is malformed
	}
	if err := ch.Format.CheckBinding(tx); err != nil {
		return r.fail(api.TxValidationCode_INVALID_ENDORSER_TRANSACTION, fmt.Errorf("committer: %w", err))
	}
	rule := rs.m[tx.Payload.Contract]
	if rule == nil {
		return r.fail(api.TxValidationCode_INVALID_CHAINCODE,
			fmt.Errorf("committer: tx %s: contract %q is not defined on channel %q", hdr.TxId, tx.Payload.Contract, ch.Name))
	}
	if !endorsed(ch.Registry, rs.rev, ch.Own, rule, tx, batch, v) {
		return r.fail(api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE,
			fmt.Errorf("committer: tx %s: endorsements do not satisfy %s's policy %s", hdr.TxId, tx.Payload.Contract, rule.pol))
	}
	if tx.Payload.Contract == lifecycle.Namespace {
		return checkDefinition(ch, rs, r)
	}
	return r
}

// verifyConfig is stage 1 for a config transaction (a channel config
// update, alone in a block the orderers made of it; see api/config.go):
// its form, its channel, and the signatures of admins of a majority of
// the channel's orgs. A valid one is VALID under the id
// ConfigEnvelope.ID and writes no state; the orderers enforce its
// sequence and the one-change rule, and the peer's node adopts its
// orderer set.
func verifyConfig(ch *Channel, rs *ruleSet, raw []byte) txResult {
	env, u, err := api.DecodeConfigEnvelope(raw)
	if err != nil {
		return txResult{tx: &api.Tx{Raw: raw}, code: api.TxValidationCode_BAD_PAYLOAD, err: fmt.Errorf("committer: config transaction: %w", err)}
	}
	r := txResult{tx: &api.Tx{Raw: raw, Payload: &api.TxPayload{Header: &api.TxHeader{Channel: u.Channel, TxId: env.ID()}},
		Response: &api.ResponsePayload{Rwset: &api.RWSet{}}}} // reads and writes nothing: MVCC passes it
	if u.Channel != ch.Name {
		return r.fail(api.TxValidationCode_TARGET_CHAIN_NOT_FOUND,
			fmt.Errorf("committer: config update %s is for channel %q, this is %q", env.ID(), u.Channel, ch.Name))
	}
	if err := ch.Registry.AdminMajorityUnder(rs.rev, env.Update, env.Signatures); err != nil {
		return r.fail(api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, fmt.Errorf("committer: config update %s: %w", env.ID(), err))
	}
	return r
}

func (r txResult) fail(code api.TxValidationCode, err error) txResult {
	r.code, r.err = code, err
	return r
}

// endorsed verifies endorsements until the policy is satisfied. An
// endorsement whose identity is invalid, duplicated, or of an org the policy
// does not name cannot help and costs no signature check; one that fails its
// check, or whose certificate rev revokes, does not count. Verification stops as soon as the policy holds.
// Ed25519 signatures go into batch when it is not nil (checkTx). An
// endorsement own made itself, or one v calls valid, needs no check
// (Channel.Own, Verdict).
func endorsed(reg *identity.Registry, rev *identity.Revocations, own *identity.Signer, rule *rule, tx *api.Tx, batch *identity.Batch, v Verdict) bool {
	var buf [8]policy.Signer
	signers := buf[:0]
	var certs [8][]byte
	seen := certs[:0]
	resp := identity.NewMessage(tx.Payload.ResponsePayload) // every endorsement signs it: hash it once
	for i, e := range tx.Payload.Endorsements {
		if i == maxEndorsements {
			break
		}
		id := e.GetEndorser()
		if id == nil || !rule.namesOrg(id.Org) || containsBytes(seen, id.Cert) {
			continue
		}
		m, err := reg.Member(id)
		if err != nil || rev.Check(m) != nil {
			continue
		}
		if !v.holds(endorsementBit(i)) && !own.Made(id, &resp, e.Signature) && m.VerifyBatch(batch, &resp, e.Signature) != nil {
			continue
		}
		seen = append(seen, id.Cert)
		signers = append(signers, policy.Signer{Org: m.Org, Role: m.Role})
		if rule.pol.Evaluate(signers) {
			return true
		}
	}
	return false
}

// rule is a contract's endorsement policy with the orgs it names.
type rule struct {
	pol  *policy.Policy
	orgs []string
}

func (r *rule) namesOrg(org string) bool {
	for _, o := range r.orgs {
		if o == org {
			return true
		}
	}
	return false
}

func containsBytes(list [][]byte, b []byte) bool {
	for _, x := range list {
		if bytes.Equal(x, b) {
			return true
		}
	}
	return false
}

// verifyBlock is stage 1's block-level check: the data hash and the
// orderer's signature over the header hash (which a channel that signs
// only checkpoints leaves off most blocks).
func verifyBlock(ch *Channel, b *api.Block, headerHash []byte) error {
	n := b.Header.Number
	if want := api.DataHash(b.Transactions); !bytes.Equal(b.Header.DataHash, want) {
		return fmt.Errorf("%w: block %d: data hash %.8x does not match its transactions (%.8x)", ErrBlockRefused, n, b.Header.DataHash, want)
	}
	sig := b.GetMetadata().GetSignature()
	if sig == nil && ch.Checkpoints {
		return nil // between checkpoints: see Channel.Checkpoints
	}
	if sig == nil || sig.Signer == nil || len(sig.Signature) == 0 {
		return fmt.Errorf("%w: block %d carries no orderer signature", ErrBlockRefused, n)
	}
	if !ch.isOrdererOrg(sig.Signer.Org) {
		return fmt.Errorf("%w: block %d is signed by org %q, which is not an orderer org of channel %q", ErrBlockRefused, n, sig.Signer.Org, ch.Name)
	}
	m, err := ch.Registry.Member(sig.Signer)
	if err != nil {
		return fmt.Errorf("%w: block %d signer: %v", ErrBlockRefused, n, err)
	}
	if m.Role != identity.RoleOrderer {
		return fmt.Errorf("%w: block %d is signed by %s with role %s, want orderer", ErrBlockRefused, n, m.Name, m.Role)
	}
	if err := m.Verify(headerHash, sig.Signature); err != nil {
		return fmt.Errorf("%w: block %d orderer signature: %v", ErrBlockRefused, n, err)
	}
	return nil
}

// CheckBlock checks a block on its own, as this package's pipeline checks
// it before validating its transactions: its place in the chain (block 0
// has no previous hash, any other names prevHash, the header hash of the
// block before it), its data hash, the orderer's signature, and, for the
// genesis block of a channel that has one, the genesis document. It
// returns the block's header hash, the next call's prevHash. Tools that
// audit a chain use it (localnet.Verify); it checks no transaction.
func (ch *Channel) CheckBlock(b *api.Block, prevHash []byte) ([]byte, error) {
	if b.GetHeader() == nil {
		return nil, fmt.Errorf("%w: block has no header", ErrBlockRefused)
	}
	n, prev := b.Header.Number, b.Header.PreviousHash
	if n == 0 && !isZero(prev) || n > 0 && !bytes.Equal(prev, prevHash) {
		return nil, fmt.Errorf("%w: block %d: previous hash %.8x, want %.8x", ErrBlockRefused, n, prev, prevHash)
	}
	hh := api.HeaderHash(b.Header)
	if err := verifyBlock(ch, b, hh); err != nil {
		return nil, err
	}
	if ch.isGenesis(b) {
		if err := ch.checkGenesis(b); err != nil {
			return nil, err
		}
	}
	return hh, nil
}
