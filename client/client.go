package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/grpctune"
	"github.com/strand-ledger/strand/mux"
)

// NonceSize is the number of random bytes in every proposal's nonce.
const NonceSize = 24

// Gateway is a connection to one peer's gateway, acting as one identity.
// It is safe for concurrent use.
type Gateway struct {
	conn    *mux.Conn
	gw      api.GatewayClient
	signer  *identity.Signer
	derived bool // made by As or OnChannel: the connection is the original's
	// channel names the channel of the calls that are not a Contract's
	// (CommitStatus, BlockEvents, SubmitTx); empty means the peer's only
	// channel.
	channel string
}

// Connect dials the gateway at addr. The caller passes the transport
// credentials (mutual TLS in production) among opts.
func Connect(addr string, signer *identity.Signer, opts ...grpc.DialOption) (*Gateway, error) {
	if signer == nil {
		return nil, fmt.Errorf("client: connecting to %s: signer is nil, expected the identity that signs proposals", addr)
	}
	// A block event lists every tx id of its block: past gRPC's 4 MiB
	// default for the largest blocks. The caller's options come after, so
	// they can set another limit.
	opts = append(append(grpctune.DialOptions(), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(api.MaxBlockMessage))), opts...)
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("client: connecting to gateway %s: %w", addr, err)
	}
	conn := mux.NewConn(cc) // unary calls over one stream: a third of the CPU
	return &Gateway{conn: conn, gw: api.NewGatewayClient(conn), signer: signer}, nil
}

// Close closes the connection.
func (g *Gateway) Close() error {
	if g.derived {
		return nil
	}
	return g.conn.Close()
}

// As returns a Gateway that acts as signer over g's connection. Many
// identities on one connection cost the peer and the client far less than
// a connection each (their calls share one stream and its writes). Its
// Close does nothing: closing g closes the connection for all.
func (g *Gateway) As(signer *identity.Signer) *Gateway {
	return &Gateway{conn: g.conn, gw: g.gw, signer: signer, derived: true, channel: g.channel}
}

// OnChannel returns a Gateway whose CommitStatus, BlockEvents and
// SubmitTx address channel of a peer that serves several (a Contract
// always addresses its own channel). Empty means the peer's only
// channel, which a peer with several refuses to guess. Its Close does
// nothing, as As's.
func (g *Gateway) OnChannel(channel string) *Gateway {
	return &Gateway{conn: g.conn, gw: g.gw, signer: g.signer, derived: true, channel: channel}
}

// Contract returns a handle on contract name of channel.
func (g *Gateway) Contract(channel, name string) *Contract {
	return &Contract{g: g, channel: channel, name: name}
}

// Contract calls one contract on one channel.
type Contract struct {
	g       *Gateway
	channel string
	name    string
	// minHeight asks the endorsers for state of at least this many
	// blocks (After); 0: the gateway's peer's height.
	minHeight uint64
}

// After returns a handle on the same contract whose proposals, queries
// included, read state that holds commit's block: every endorser, the
// gateway's own peer too, waits until it has committed that block (a
// second at most while it catches up; else 503, which SubmitWithRetry
// retries). A client that moves to another gateway, or reads through
// one gateway what it wrote through another, passes the last Commit it
// saw and reads its own writes. Through one gateway it needs nothing:
// the gateway asks for its peer's height anyway. A nil commit returns c.
func (c *Contract) After(commit *Commit) *Contract {
	if commit == nil {
		return c
	}
	d := *c
	d.minHeight = max(c.minHeight, commit.Block+1)
	return &d
}

// Commit is a transaction committed on the gateway's peer.
type Commit struct {
	TxID   string
	Block  uint64
	Code   api.TxValidationCode
	Result []byte // what the contract returned when endorsed
	// Admitted is, after SubmitAndWait (or Contract.Submit), how long the
	// gateway took to have an orderer admit the transaction; the rest of
	// the call was ordering, validation and commit. Zero otherwise.
	Admitted time.Duration
}

// proposal is a signed proposal with what the client checks against.
type proposal struct {
	signed *api.SignedProposal
	header *api.TxHeader
}

func (c *Contract) propose(fn string, args []string) (*proposal, error) {
	nonce := make([]byte, NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("client: drawing a nonce: %w", err)
	}
	hdr := &api.TxHeader{Channel: c.channel, Creator: c.g.signer.Identity(), Nonce: nonce, TimestampUnixNano: time.Now().UnixNano()}
	hdr.TxId = api.TxID(nonce, hdr.Creator)
	p := &api.Proposal{Header: hdr, Contract: c.name, Function: fn, Args: make([][]byte, len(args))}
	for i, a := range args {
		p.Args[i] = []byte(a)
	}
	raw, err := proto.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("client: encoding proposal %s: %w", hdr.TxId, err)
	}
	if len(raw) > api.MaxTxBytes {
		return nil, fmt.Errorf("%w: the proposal of %s.%s is %d bytes, over the limit of %d (api.MaxTxBytes) that every gateway enforces; "+
			"keep large data off the chain and put its hash on it", ErrTooLarge, c.name, fn, len(raw), api.MaxTxBytes)
	}
	sig, err := c.g.signer.Sign(raw)
	if err != nil {
		return nil, fmt.Errorf("client: signing proposal %s: %w", hdr.TxId, err)
	}
	return &proposal{signed: &api.SignedProposal{Proposal: raw, Signature: sig, Channel: c.channel, MinHeight: c.minHeight}, header: hdr}, nil
}

// Evaluate runs fn as a query on the gateway's peer and returns its
// result. Nothing is ordered. A refusal is an *EndorseError.
func (c *Contract) Evaluate(ctx context.Context, fn string, args ...string) ([]byte, error) {
	p, err := c.propose(fn, args)
	if err != nil {
		return nil, err
	}
	r, err := c.g.gw.Evaluate(ctx, p.signed)
	if err != nil {
		return nil, fmt.Errorf("client: evaluating %s.%s (tx %s): %w", c.name, fn, p.header.TxId, err)
	}
	if r.Status != http.StatusOK {
		return nil, &EndorseError{TxID: p.header.TxId, Status: r.Status, Message: r.Message}
	}
	return r.Result, nil
}

// Submit endorses fn, signs the transaction, sends it for ordering and
// waits until it is committed on the gateway's peer. A transaction
// committed with a code other than VALID returns its Commit and a
// *CommitError.
func (c *Contract) Submit(ctx context.Context, fn string, args ...string) (*Commit, error) {
	tx, err := c.Endorse(ctx, fn, args...)
	if err != nil {
		return nil, err
	}
	return tx.SubmitAndWait(ctx)
}

// SubmitAndWait is Submit then Wait in one call to the gateway, which
// answers once the transaction is committed on its peer: one round trip
// fewer. Errors are Submit's, with status 504 when the deadline passed
// after the transaction was submitted, and Wait's CommitError.
func (t *Transaction) SubmitAndWait(ctx context.Context) (*Commit, error) {
	r, err := t.g.gw.Submit(ctx, &api.SubmitRequest{Transaction: t.raw, WaitCommit: true, Channel: t.channel})
	if err != nil {
		if status.Code(err) == codes.DeadlineExceeded || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &SubmitError{TxID: t.id, Status: http.StatusGatewayTimeout,
				Message: fmt.Sprintf("submitted, but not known to be committed on the gateway's peer before the deadline (%v); wait again with CommitStatus", status.Convert(err).Message())}
		}
		return nil, fmt.Errorf("client: submitting tx %s: %w", t.id, err)
	}
	if r.Status != http.StatusOK {
		return nil, &SubmitError{TxID: t.id, Status: r.Status, Message: r.Message, RetryAfter: retryAfter(r.RetryAfterMs)}
	}
	if r.Commit == nil {
		return nil, fmt.Errorf("client: tx %s: the gateway admitted it but sent no commit status (an older gateway?); wait with CommitStatus", t.id)
	}
	c := &Commit{TxID: t.id, Block: r.Commit.Block, Code: r.Commit.Code, Result: t.result,
		Admitted: time.Duration(r.AdmittedUs) * time.Microsecond}
	if c.Code != api.TxValidationCode_VALID {
		return c, &CommitError{TxID: t.id, Block: c.Block, Code: c.Code}
	}
	return c, nil
}

// Retry waits: a random time up to retryBackoff, doubling per attempt up to
// maxRetryBackoff.
const (
	retryBackoff    = 5 * time.Millisecond
	maxRetryBackoff = 200 * time.Millisecond
)

// SubmitWithRetry is Submit that runs the transaction again, as a new
// proposal, up to retries more times while it commits with
// MVCC_READ_CONFLICT or PHANTOM_READ_CONFLICT, or while the gateway
// answers 429 (overloaded) or refuses an endorsement with a retryable 503
// (a compute node or the memory tier did not answer); it then waits the
// gateway's hint first.
func (c *Contract) SubmitWithRetry(ctx context.Context, retries int, fn string, args ...string) (*Commit, error) {
	backoff := retryBackoff
	for attempt := 0; ; attempt++ {
		commit, err := c.Submit(ctx, fn, args...)
		if err == nil || attempt >= retries || ctx.Err() != nil {
			return commit, err
		}
		// Wait a random part of a growing interval before running it
		// again: clients that collided on a key then rarely collide on
		// it again, where retrying at once keeps them in step.
		wait := time.Duration(mrand.Int64N(int64(backoff)))
		var ce *CommitError
		if hint, ok := overloaded(err); ok {
			wait += hint
		} else if !errors.As(err, &ce) || !ce.Retryable() {
			return commit, err
		}
		select {
		case <-ctx.Done():
			return commit, err
		case <-time.After(wait):
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// retryAfter converts a response's retry hint.
func retryAfter(ms uint32) time.Duration { return time.Duration(ms) * time.Millisecond }

// Transaction is an endorsed transaction, signed by the client and ready
// to submit: the lower-level steps of Contract.Submit.
type Transaction struct {
	g       *Gateway
	channel string
	id      string
	result  []byte
	raw     []byte // the signed Transaction's bytes
}

// ID returns the transaction's id.
func (t *Transaction) ID() string { return t.id }

// Result returns what the contract returned when endorsed.
func (t *Transaction) Result() []byte { return t.result }

// Bytes returns the signed Transaction's bytes.
func (t *Transaction) Bytes() []byte { return t.raw }

// Endorse proposes fn, has the gateway gather endorsements, checks the
// payload it returns (see the package comment) and signs it.
func (c *Contract) Endorse(ctx context.Context, fn string, args ...string) (*Transaction, error) {
	p, err := c.propose(fn, args)
	if err != nil {
		return nil, err
	}
	r, err := c.g.gw.Endorse(ctx, p.signed)
	if err != nil {
		return nil, fmt.Errorf("client: endorsing %s.%s (tx %s): %w", c.name, fn, p.header.TxId, err)
	}
	if r.Status != http.StatusOK {
		return nil, &EndorseError{TxID: p.header.TxId, Status: r.Status, Message: r.Message, RetryAfter: retryAfter(r.RetryAfterMs)}
	}
	result, err := c.check(p, r.Payload)
	if err != nil {
		return nil, err
	}
	sig, err := c.g.signer.Sign(r.Payload)
	if err != nil {
		return nil, fmt.Errorf("client: signing tx %s: %w", p.header.TxId, err)
	}
	raw, err := proto.Marshal(&api.Transaction{Payload: r.Payload, Signature: sig})
	if err != nil {
		return nil, fmt.Errorf("client: encoding tx %s: %w", p.header.TxId, err)
	}
	if len(raw) > api.MaxTxBytes {
		return nil, fmt.Errorf("%w: tx %s of %s.%s is %d bytes with its read/write set and endorsements, over the limit of %d (api.MaxTxBytes) "+
			"that the orderers enforce; write less per transaction", ErrTooLarge, p.header.TxId, c.name, fn, len(raw), api.MaxTxBytes)
	}
	return &Transaction{g: c.g, channel: c.channel, id: p.header.TxId, result: result, raw: raw}, nil
}

// check verifies that payload is the transaction the client proposed and
// returns the endorsed result.
func (c *Contract) check(p *proposal, payload []byte) ([]byte, error) {
	id := p.header.TxId
	bad := func(format string, args ...any) error {
		return fmt.Errorf("client: the gateway's payload for tx %s %s; refusing to sign it", id, fmt.Sprintf(format, args...))
	}
	tp, err := api.DecodeTxPayload(payload)
	if err != nil {
		return nil, bad("does not decode: %v", err)
	}
	if !sameHeader(tp.Header, p.header) {
		return nil, bad("has a header other than the one proposed (tx id %q)", tp.GetHeader().GetTxId())
	}
	if tp.Contract != c.name {
		return nil, bad("is for contract %q, expected %q", tp.Contract, c.name)
	}
	if len(tp.Endorsements) == 0 {
		return nil, bad("carries no endorsement")
	}
	rp, err := api.DecodeResponsePayload(tp.ResponsePayload)
	if err != nil {
		return nil, bad("has a response payload that does not decode: %v", err)
	}
	switch {
	case !bytes.Equal(rp.ProposalHash, api.ProposalHash(p.signed.Proposal)):
		return nil, bad("has a response to another proposal (proposal hash %x)", rp.ProposalHash)
	case rp.TxId != id || rp.Channel != p.header.Channel:
		return nil, bad("has a response bound to tx %q on channel %q, not to this transaction", rp.TxId, rp.Channel)
	case rp.Contract != c.name:
		return nil, bad("has a response of contract %q, expected %q", rp.Contract, c.name)
	case rp.Status != api.StatusOK:
		return nil, bad("has a response with status %d (%s), expected %d", rp.Status, rp.Message, api.StatusOK)
	}
	return rp.Result, nil
}

// sameHeader reports whether two transaction headers are equal, as
// proto.Equal would say, without its reflection.
func sameHeader(a, b *api.TxHeader) bool {
	if a == nil || b == nil {
		return a == b
	}
	ca, cb := a.Creator, b.Creator
	return a.Channel == b.Channel && a.TxId == b.TxId && bytes.Equal(a.Nonce, b.Nonce) &&
		a.TimestampUnixNano == b.TimestampUnixNano && (ca == nil) == (cb == nil) &&
		(ca == nil || ca.Org == cb.Org && bytes.Equal(ca.Cert, cb.Cert))
}

// Submit sends the transaction for ordering. A refusal is a *SubmitError.
func (t *Transaction) Submit(ctx context.Context) error {
	r, err := t.g.gw.Submit(ctx, &api.SubmitRequest{Transaction: t.raw, Channel: t.channel})
	if err != nil {
		return fmt.Errorf("client: submitting tx %s: %w", t.id, err)
	}
	if r.Status != http.StatusOK {
		return &SubmitError{TxID: t.id, Status: r.Status, Message: r.Message, RetryAfter: retryAfter(r.RetryAfterMs)}
	}
	return nil
}

// Wait waits until the transaction is committed on the gateway's peer;
// see Contract.Submit for what it returns.
func (t *Transaction) Wait(ctx context.Context) (*Commit, error) {
	c, err := t.g.commitStatus(ctx, t.channel, t.id)
	if c != nil {
		c.Result = t.result
	}
	return c, err
}

// CommitStatus waits until transaction txID is committed on the gateway's
// peer. If ctx's deadline passes first it returns a *SubmitError with
// status 504; the transaction may still commit later.
func (g *Gateway) CommitStatus(ctx context.Context, txID string) (*Commit, error) {
	return g.commitStatus(ctx, g.channel, txID)
}

func (g *Gateway) commitStatus(ctx context.Context, channel, txID string) (*Commit, error) {
	r, err := g.gw.CommitStatus(ctx, &api.CommitStatusRequest{TxId: txID, Channel: channel})
	if err != nil {
		if status.Code(err) == codes.DeadlineExceeded || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &SubmitError{TxID: txID, Status: http.StatusGatewayTimeout,
				Message: fmt.Sprintf("not committed on the gateway's peer before the deadline (%v); wait again with CommitStatus", status.Convert(err).Message())}
		}
		return nil, fmt.Errorf("client: waiting for tx %s to commit: %w", txID, err)
	}
	c := &Commit{TxID: txID, Block: r.Block, Code: r.Code}
	if r.Code != api.TxValidationCode_VALID {
		return c, &CommitError{TxID: txID, Block: r.Block, Code: r.Code}
	}
	return c, nil
}

// BlockEvents streams the commit events of every block from start on, in
// order. The event channel is closed when the stream ends; the error
// channel then yields why (ctx.Err() when ctx ended it) and is closed.
func (g *Gateway) BlockEvents(ctx context.Context, start uint64) (<-chan *api.BlockEvent, <-chan error) {
	events, errc := make(chan *api.BlockEvent, 16), make(chan error, 1)
	go func() {
		defer close(errc)
		defer close(events)
		errc <- g.streamEvents(ctx, start, events)
	}()
	return events, errc
}

func (g *Gateway) streamEvents(ctx context.Context, start uint64, out chan<- *api.BlockEvent) error {
	stream, err := g.gw.BlockEvents(ctx, &api.BlockEventsRequest{Start: start, Channel: g.channel})
	if err != nil {
		return fmt.Errorf("client: opening block events from block %d: %w", start, err)
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("client: block events stream ended: %w", err)
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Channels lists the channels the gateway's peer serves, sorted.
func (g *Gateway) Channels(ctx context.Context) ([]string, error) {
	r, err := g.gw.Channels(ctx, &api.ChannelsRequest{})
	if err != nil {
		return nil, fmt.Errorf("client: listing the peer's channels: %w", err)
	}
	return r.GetChannels(), nil
}

// SubmitTx sends a transaction built and signed elsewhere (such as a
// contract definition signed by org admins) for ordering. A refusal is a
// *SubmitError. Wait for it with CommitStatus.
func (g *Gateway) SubmitTx(ctx context.Context, txID string, raw []byte) error {
	r, err := g.gw.Submit(ctx, &api.SubmitRequest{Transaction: raw, Channel: g.channel})
	if err != nil {
		return fmt.Errorf("client: submitting tx %s: %w", txID, err)
	}
	if r.Status != http.StatusOK {
		return &SubmitError{TxID: txID, Status: r.Status, Message: r.Message, RetryAfter: retryAfter(r.RetryAfterMs)}
	}
	return nil
}
