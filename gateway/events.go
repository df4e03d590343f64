package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
	"github.com/strand-ledger/strand/ledger"
)

// CommitStatus waits until the transaction is committed on this peer.
func (g *Gateway) CommitStatus(ctx context.Context, req *api.CommitStatusRequest) (*api.CommitStatusResponse, error) {
	g.metrics.commitStatus.Add(1)
	start := time.Now()
	id := req.GetTxId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "gateway: commit status request names no tx id, expected the id Endorse's payload carries")
	}
	// Register before the lookup: a block committed after the lookup
	// reaches this call through the dispatcher.
	ch := g.waiters.register(id)
	if resp, ok, err := g.lookup(id); err != nil || ok {
		g.waiters.cancel(id, ch)
		return resp, err
	}
	select {
	case r := <-ch:
		if r.err == nil {
			g.metrics.commitLatency.Since(start)
		}
		return r.resp, r.err
	case <-ctx.Done():
		g.waiters.cancel(id, ch)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			g.metrics.commitTimeouts.Add(1)
			return nil, status.Errorf(codes.DeadlineExceeded,
				"gateway: 504: tx %s is not committed on this peer (height %d) by the request's deadline; ask again later, or check that it was submitted",
				id, g.cfg.Ledger.Height())
		}
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// lookup answers from the block store's index, if the tx id is there.
func (g *Gateway) lookup(id string) (*api.CommitStatusResponse, bool, error) {
	loc, ok, err := g.cfg.Ledger.TxLocation(id)
	if err != nil {
		return nil, false, status.Errorf(codes.Internal, "gateway: looking up tx %s in the block store: %v", id, err)
	}
	if !ok {
		return nil, false, nil
	}
	return &api.CommitStatusResponse{Code: loc.Code, Block: loc.Block}, true, nil
}

// errCommitterStopped answers the calls waiting when the peer stops.
var errCommitterStopped = status.Error(codes.Unavailable, "gateway: the peer's committer stopped while waiting for the transaction")

// errLagged says a subscription was cut off for falling behind.
var errLagged = errors.New("gateway: commit event subscription lagged")

// BlockEvents streams the commit events of every block from req.Start on,
// in order, until the client goes away. A caller that may not read the
// channel (Config.Readers) is refused with codes.PermissionDenied, and
// so is the stream of one that may no longer read (its certificate
// revoked, its org removed) once the membership update is in force.
func (g *Gateway) BlockEvents(req *api.BlockEventsRequest, stream grpc.ServerStreamingServer[api.BlockEvent]) error {
	may := g.readCheck(stream.Context())
	if err := may(); err != nil {
		return err
	}
	g.metrics.blockStreams.Add(1)
	next := req.GetStart()
	for {
		sub := g.cfg.Ledger.Subscribe(g.cfg.EventBuffer)
		err := g.streamFrom(stream, &next, sub, may)
		sub.Close()
		if !errors.Is(err, errLagged) {
			return err
		}
		g.metrics.lagged.Add(1)
	}
}

// streamFrom sends committed blocks from *next on, reading them from the
// block store: first up to the committed height, then, whenever an event
// says block n is committed, up to n.
func (g *Gateway) streamFrom(stream grpc.ServerStreamingServer[api.BlockEvent], next *uint64, sub *committer.Subscription, may func() error) error {
	ctx := stream.Context()
	it := g.cfg.Blocks.Iterator(*next)
	defer it.Close()
	sendUpTo := func(end uint64) error {
		for *next < end {
			n, raw, err := it.Next()
			if errors.Is(err, ledger.ErrBeforeBase) {
				return beforeBase(*next, g.cfg.Blocks.Base().Height)
			}
			if err != nil {
				return status.Errorf(codes.Internal, "gateway: reading block %d from the block store: %v", *next, err)
			}
			ev, err := blockEvent(n, raw)
			if err != nil {
				return status.Errorf(codes.Internal, "gateway: %v", err)
			}
			if err := may(); err != nil {
				return err
			}
			if err := stream.Send(ev); err != nil {
				return err
			}
			g.metrics.blocksSent.Add(1)
			*next = n + 1
		}
		return nil
	}
	if err := sendUpTo(g.cfg.Ledger.Height()); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case ev, ok := <-sub.C:
			if !ok {
				if sub.Lagged() {
					return errLagged
				}
				return status.Errorf(codes.Unavailable, "gateway: the peer's committer stopped at height %d; reconnect from block %d", g.cfg.Ledger.Height(), *next)
			}
			if err := sendUpTo(ev.Number + 1); err != nil {
				return err
			}
		}
	}
}

// readCheck returns the read check of a block stream's caller (ctx's):
// caller.CheckRead, run at once and again whenever the membership in
// force has changed since (identity.Registry.Revocations: a new value
// for each update committed), so a stream ends, PermissionDenied, when
// its caller may no longer read.
func (g *Gateway) readCheck(ctx context.Context) func() error {
	var checked *identity.Revocations
	first := true
	return func() error {
		if !g.cfg.Readers.Checks() {
			return nil
		}
		rv := g.cfg.Registry.Revocations()
		if !first && rv == checked {
			return nil
		}
		first, checked = false, rv
		if err := caller.CheckRead(ctx, g.cfg.Registry, g.cfg.Readers, g.cfg.Channel); err != nil {
			return status.Error(codes.PermissionDenied, "gateway: "+err.Error())
		}
		return nil
	}
}

// blockEvent decodes a stored block into its commit event: tx ids, codes
// from the metadata, and the contract events of VALID transactions.
func blockEvent(n uint64, raw []byte) (*api.BlockEvent, error) {
	b, err := api.DecodeBlock(raw)
	if err != nil {
		return nil, fmt.Errorf("stored block %d does not decode: %w", n, err)
	}
	codes := b.GetMetadata().GetValidationCodes()
	if len(codes) != len(b.Transactions) {
		return nil, fmt.Errorf("stored block %d has %d validation codes for %d transactions", n, len(codes), len(b.Transactions))
	}
	ev := &api.BlockEvent{Number: n, TxIds: make([]string, len(b.Transactions)), Codes: codes}
	for i, rawTx := range b.Transactions {
		if api.IsConfigEnvelope(rawTx) { // a channel config update: its id, no contract event
			if env, _, err := api.DecodeConfigEnvelope(rawTx); err == nil {
				ev.TxIds[i] = env.ID()
			}
			continue
		}
		if api.IsMembersEnvelope(rawTx) { // a membership update: its id, no contract event
			ev.TxIds[i] = api.MembersID(rawTx)
			continue
		}
		tx, _, _ := api.DecodeTx(rawTx)
		ev.TxIds[i] = tx.ID()
		if api.TxValidationCode(codes[i]) == api.TxValidationCode_VALID && tx.Response.GetEvent() != nil {
			ev.Events = append(ev.Events, &api.TxEvent{TxId: tx.ID(), Contract: tx.Payload.GetContract(), Event: tx.Response.Event})
		}
	}
	return ev, nil
}

// reasonLedgerStart is the ErrorInfo reason of BlockEvents' refusal of
// blocks below the start of a peer's ledger; its metadata "start" is that
// block number in decimal.
const reasonLedgerStart = "LEDGER_STARTS_LATER"

// beforeBase is BlockEvents' refusal of block want on a peer whose ledger
// starts at block start (it joined the channel from a snapshot): status
// OutOfRange with an ErrorInfo detail that LedgerStart reads, so a client
// learns where to start from the status, not from the message.
func beforeBase(want, start uint64) error {
	st := status.Newf(codes.OutOfRange, "gateway: block %d is not on this peer: its ledger starts at block %d (it joined the channel from a snapshot); ask for events from %d on",
		want, start, start)
	detailed, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reasonLedgerStart, Domain: "strand.gateway",
		Metadata: map[string]string{"start": strconv.FormatUint(start, 10)}})
	if err != nil { // only a detail that does not marshal; the message still says it
		return st.Err()
	}
	return detailed.Err()
}

// LedgerStart reports the block a peer's ledger starts at when err (or an
// error it wraps) is that peer's refusal of block events below it; ok is
// false for any other error.
func LedgerStart(err error) (start uint64, ok bool) {
	st, isStatus := status.FromError(err)
	if !isStatus || st.Code() != codes.OutOfRange {
		return 0, false
	}
	for _, d := range st.Details() {
		info, isInfo := d.(*errdetails.ErrorInfo)
		if !isInfo || info.GetReason() != reasonLedgerStart {
			continue
		}
		start, err := strconv.ParseUint(info.GetMetadata()["start"], 10, 64)
		return start, err == nil
	}
	return 0, false
}
