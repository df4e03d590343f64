package orderer

import (
	"context"
	"errors"
	"fmt"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

// Submit admits one transaction for ordering. It runs in the caller's
// goroutine, so admission (decoding and the creator's signature check)
// spreads over all cores and never touches the ordered path. It checks,
// cheapest first:
//
//   - the bytes decode as a structurally valid transaction (api.DecodeTx),
//     else ErrMalformed;
//   - the header names this orderer's channel, else ErrWrongChannel;
//   - the endorsed response names the same channel and tx id
//     (api.Format.CheckBinding), else ErrMalformed;
//   - the creator is a valid client or admin of a channel org whose
//     certificate has not expired, and its signature over the payload
//     verifies, else ErrForbidden.
//
// Endorsements, the endorsement policy, MVCC and duplicate tx ids are the
// peers' business. An admitted transaction is queued without blocking:
// if the queue is full Submit returns ErrOverloaded at once; after Close it
// returns ErrClosed, after a storage failure ErrFailed; a done ctx returns
// ctx's error.
//
// nil means admitted, NOT durable: a crash before the transaction's block
// is appended loses it, and a client learns that its transaction committed
// from the peers. Submit keeps raw: the caller must not modify it.
func (o *Orderer) Submit(ctx context.Context, raw []byte) error {
	o.m.submitted.Add(1)
	if err := ctx.Err(); err != nil {
		o.m.refusedCtx.Add(1)
		return fmt.Errorf("orderer: submit of %d bytes: %w", len(raw), err)
	}
	a, err := o.admit(raw)
	if err != nil {
		return err
	}
	return o.route(ctx, a)
}

// route queues an admitted transaction here (single node, or the Raft
// leader) or forwards it to the Raft leader, which queues it without
// checking it again (the follower did, and the Cluster service accepts
// only member orderers). With no leader known it returns ErrUnavailable.
func (o *Orderer) route(ctx context.Context, a admitted) error {
	if o.raft == nil {
		return o.enqueue(ctx, a)
	}
	switch lead := o.raft.leader.Load(); {
	case lead == o.raft.cfg.ID:
		return o.enqueue(ctx, a)
	case o.fatal.Load() != nil || o.removed.Load() != nil || o.isClosed():
		return o.enqueue(ctx, a) // refuses it with the reason
	case lead == 0:
		o.m.refusedUnavailable.Add(1)
		o.raft.wakeUp() // a quiesced member must tick to elect one
		return o.noLeader("tx " + a.id + ": ")
	default:
		if err := o.raft.tr.forward(ctx, lead, a); err != nil {
			o.m.refusedUnavailable.Add(1)
			o.raft.wakeUp() // the leader may be gone while the group was quiesced
			return err
		}
		o.m.admitted.Add(1)
		return nil
	}
}

func (o *Orderer) isClosed() bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.mu.closed
}

// admit checks one transaction (see Submit) and returns it with its tx id.
func (o *Orderer) admit(raw []byte) (admitted, error) {
	if len(raw) > api.MaxTxBytes {
		o.m.refusedMalformed.Add(1)
		return admitted{}, fmt.Errorf("%w: a transaction of %d bytes, over the limit of %d (api.MaxTxBytes)", ErrMalformed, len(raw), api.MaxTxBytes)
	}
	if api.IsConfigEnvelope(raw) {
		return o.admitConfig(raw)
	}
	if api.IsMembersEnvelope(raw) {
		return o.admitMembers(raw)
	}
	tx, _, err := api.DecodeTx(raw)
	if err != nil {
		o.m.refusedMalformed.Add(1)
		return admitted{}, fmt.Errorf("%w: %d bytes: %w", ErrMalformed, len(raw), err)
	}
	hdr := tx.Payload.Header
	if hdr.Channel != o.cfg.Channel {
		o.m.refusedChannel.Add(1)
		return admitted{}, fmt.Errorf("%w: tx %s is for channel %q, this orderer orders channel %q", ErrWrongChannel, hdr.TxId, hdr.Channel, o.cfg.Channel)
	}
	if err := o.cfg.Format.CheckBinding(tx); err != nil {
		o.m.refusedMalformed.Add(1)
		return admitted{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	m, err := o.cfg.Registry.Member(hdr.Creator)
	if err != nil {
		o.m.refusedForbidden.Add(1)
		return admitted{}, fmt.Errorf("%w: tx %s creator: %w", ErrForbidden, hdr.TxId, err)
	}
	if err := o.cfg.Registry.Revoked(m); err != nil {
		o.m.refusedForbidden.Add(1)
		return admitted{}, fmt.Errorf("%w: tx %s creator: %w", ErrForbidden, hdr.TxId, err)
	}
	if m.Role != identity.RoleClient && m.Role != identity.RoleAdmin {
		o.m.refusedForbidden.Add(1)
		return admitted{}, fmt.Errorf("%w: tx %s creator %q of org %q has role %s, want client or admin", ErrForbidden, hdr.TxId, m.Name, m.Org, m.Role)
	}
	if now := o.cfg.Clock(); now.After(m.NotAfter) {
		o.m.refusedForbidden.Add(1)
		return admitted{}, fmt.Errorf("%w: tx %s creator %q of org %q: certificate expired at %s, it is now %s",
			ErrForbidden, hdr.TxId, m.Name, m.Org, m.NotAfter.UTC().Format("2006-01-02T15:04:05Z"), now.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if err := m.Verify(tx.Envelope.Payload, tx.Envelope.Signature); err != nil {
		o.m.refusedForbidden.Add(1)
		return admitted{}, fmt.Errorf("%w: tx %s: %w", ErrForbidden, hdr.TxId, err)
	}
	return admitted{raw: raw, id: hdr.TxId}, nil
}

// admitConfig checks a config update against the config this member has
// applied (checkConfigUpdate: form, channel, sequence, one orderer added
// or removed, the admins' signatures) and that no signer's certificate
// has expired. The leader checks it again when it proposes it, and every
// member when it applies it.
func (o *Orderer) admitConfig(raw []byte) (admitted, error) {
	if o.raft == nil {
		o.m.refusedForbidden.Add(1)
		return admitted{}, fmt.Errorf("%w: config updates change a Raft ordering service's members; channel %q has a single-node orderer",
			ErrForbidden, o.cfg.Channel)
	}
	ch, err := checkConfigUpdate(o.cfg.Registry, o.cfg.Channel, *o.raft.confView.Load(), raw)
	if errors.Is(err, api.ErrBadConfigUpdate) {
		o.m.refusedMalformed.Add(1)
		return admitted{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err != nil {
		o.m.refusedForbidden.Add(1)
		return admitted{}, fmt.Errorf("%w: %w", ErrForbidden, err)
	}
	env, _, _ := api.DecodeConfigEnvelope(raw)
	now := o.cfg.Clock()
	for i, s := range env.Signatures {
		if m, err := o.cfg.Registry.Member(s.Signer); err == nil && now.After(m.NotAfter) {
			o.m.refusedForbidden.Add(1)
			return admitted{}, fmt.Errorf("%w: %s: signatures[%d] by %s/%s: certificate expired at %s", ErrForbidden, ch.id, i, m.Org, m.Name,
				m.NotAfter.UTC().Format("2006-01-02T15:04:05Z"))
		}
	}
	return admitted{raw: raw, id: ch.id, config: true}, nil
}

// enqueue hands an admitted transaction to the loop without blocking.
func (o *Orderer) enqueue(ctx context.Context, a admitted) error {
	if err := ctx.Err(); err != nil {
		o.m.refusedCtx.Add(1)
		return fmt.Errorf("orderer: submit of tx %s: %w", a.id, err)
	}
	if e := o.fatal.Load(); e != nil {
		o.m.refusedClosed.Add(1)
		return fmt.Errorf("orderer: tx %s refused: %w", a.id, *e)
	}
	if e := o.removed.Load(); e != nil {
		o.m.refusedClosed.Add(1)
		return fmt.Errorf("orderer: tx %s refused: %w", a.id, *e)
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.mu.closed {
		o.m.refusedClosed.Add(1)
		return fmt.Errorf("%w: tx %s refused, the orderer of channel %q is closing", ErrClosed, a.id, o.cfg.Channel)
	}
	n := int64(len(a.raw))
	if queued := o.inBytes.Add(n); queued > int64(o.cfg.QueueBytes) {
		o.inBytes.Add(-n)
		o.m.refusedOverloaded.Add(1)
		return fmt.Errorf("%w: tx %s of %d bytes refused, %d bytes of admitted transactions are waiting and the limit is %d (Config.QueueBytes); retry later",
			ErrOverloaded, a.id, n, queued-n, o.cfg.QueueBytes)
	}
	select {
	case o.in <- a:
		o.m.admitted.Add(1)
		return nil
	default:
		o.inBytes.Add(-n)
		o.m.refusedOverloaded.Add(1)
		return fmt.Errorf("%w: tx %s refused, %d admitted transactions are waiting (Config.Queue); retry later", ErrOverloaded, a.id, cap(o.in))
	}
}
