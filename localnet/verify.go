package localnet

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/node"
)

// Chain is what Verify learned of one node's chain.
type Chain struct {
	Node
	Height uint64
	// Last is the header hash of block Height-1 (for a peer, that of the
	// orderers' block it holds at that number); nil at height 0.
	Last []byte
	// Signed, for an orderer, is the number of its newest block that
	// carries an orderer signature, plus one: every block below it is
	// covered by a signature through the hash chain. Equal to Height on a
	// channel that signs every block; on one that signs checkpoints, the
	// blocks from Signed to Height rest on TLS until the next checkpoint.
	Signed uint64
	// Removed is set for an orderer a config update removed from the
	// channel (Layout.Removed): its chain is not read (it stopped at its
	// removal) and it is left out of every check.
	Removed bool
	// Err says why the node's chain could not be read: it wraps
	// ErrUnavailable or ErrUnreadable. Such a node is left out of the
	// comparison, and Verify fails.
	Err error
}

// The ways Verify fails; its error wraps one or more of them, each
// naming the node and why.
var (
	// ErrDisagree: nodes disagree on the chain, or an orderer serves a
	// block that does not check. Waiting does not mend it.
	ErrDisagree = errors.New("localnet: chain check failed")
	// ErrUnavailable: the node did not answer (gRPC Unavailable or
	// DeadlineExceeded: it is down, or hung).
	ErrUnavailable = errors.New("localnet: node did not answer")
	// ErrUnreadable: the node answered but could not serve its own chain
	// (any other gRPC status: a block store it cannot read, say).
	ErrUnreadable = errors.New("localnet: node cannot serve its chain")
	// ErrBehind: the node answered with a chain shorter than the longest
	// when the settle period ran out.
	ErrBehind = errors.New("localnet: node behind")
)

// VerifyOptions configures Verify.
type VerifyOptions struct {
	// Idle is how long a peer's event stream may pause before its last
	// block counts as read (see Conn.Height). Default 200ms.
	Idle time.Duration
	// Settle is how long Verify reads the network again while some node
	// is down, unreadable or behind, before it fails; nodes that disagree
	// fail at once. 0 reads once.
	Settle time.Duration
	// Retry is the pause between two reads. Default 250ms.
	Retry time.Duration
	// Channel is the file of the channel to verify (Layout.Channels):
	// default the network's channel (Layout.Channel).
	Channel string
}

// Verify reads the chain of every node of the network through its API
// and checks it end to end:
//
//   - every orderer: each block from 0 (Deliver, not following) is checked
//     as a peer checks it (committer.Channel.CheckBlock: the link to the
//     block before, data hash, orderer signature, genesis document);
//   - the orderers agree: two orderers that both have block n have the
//     same header hash for it (a shorter chain is a prefix of a longer);
//   - every peer: each block it committed (its gateway's block events
//     from 0) holds the transactions, by id, of the orderers' block of
//     that number, and every peer gives every transaction the same
//     validation code;
//   - every node answered, and every node is at the height of the longest
//     chain.
//
// The first three are safety: a failure wraps ErrDisagree and is returned
// at once. The last is liveness: nodes catch up at their own pace, so
// while a node is down, unreadable or behind Verify reads the network
// again, for up to opts.Settle, and then fails with an error that names
// each such node and wraps ErrUnavailable, ErrUnreadable or ErrBehind.
// An orderer a config update removed from the channel (Layout.Removed) is
// not read and not judged: its Chain says Removed. On success every other
// Chain has the same Height and Last. The returned chains are those of the
// last read.
func Verify(ctx context.Context, l *Layout, opts VerifyOptions) ([]Chain, error) {
	if opts.Idle == 0 {
		opts.Idle = 200 * time.Millisecond
	}
	if opts.Retry == 0 {
		opts.Retry = 250 * time.Millisecond
	}
	ch, err := node.LoadChannel(cmp.Or(opts.Channel, l.Channel))
	if err != nil {
		return nil, err
	}
	cc, err := ch.Committer()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(opts.Settle)
	for {
		chains, err := l.readChains(ctx, ch, cc.CheckBlock, opts.Idle)
		if err != nil {
			return chains, err
		}
		err = settled(chains)
		if err == nil || !time.Now().Before(deadline) {
			return chains, err
		}
		select {
		case <-ctx.Done():
			return chains, errors.Join(err, ctx.Err())
		case <-time.After(opts.Retry):
		}
	}
}

// settled says whether a read of the network (none of whose chains
// disagree) is final: nil when every node answered and all are at the
// same height, else an error naming each node that is not. It is pure:
// the caller decides how long to wait for it.
func settled(chains []Chain) error {
	var top uint64
	var topBy string
	chains = slices.DeleteFunc(slices.Clone(chains), func(c Chain) bool { return c.Removed })
	for _, c := range chains {
		if c.Err == nil && c.Height > top {
			top, topBy = c.Height, c.Name
		}
	}
	var errs []error
	for _, c := range chains {
		switch {
		case c.Err != nil:
			errs = append(errs, c.Err)
		case c.Height < top:
			errs = append(errs, fmt.Errorf("%w: %s %s is at height %d, %s at %d", ErrBehind, c.Role, c.Name, c.Height, topBy, top))
		}
	}
	return errors.Join(errs...)
}

// unanswered wraps err, the failure to read node n's chain, with what it
// means for n: ErrUnavailable when n did not answer, ErrUnreadable when it
// answered with an error. It goes by the gRPC status code (and context
// deadlines), never by the message.
func unanswered(n Node, err error) error {
	kind := ErrUnreadable
	if c := status.Code(err); c == codes.Unavailable || c == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
		kind = ErrUnavailable
	}
	return fmt.Errorf("%w: %s %s at %s: %w", kind, n.Role, n.Name, n.Address, err)
}

// readChains reads every node's chain once. Its error is a disagreement
// (ErrDisagree) or a setup failure; a node that cannot be read has its
// Chain.Err set instead.
func (l *Layout) readChains(ctx context.Context, ch *node.ChannelConfig, check func(*api.Block, []byte) ([]byte, error), idle time.Duration) ([]Chain, error) {
	v := &verifier{}
	out := make([]Chain, len(l.Nodes))
	var errs []error
	for i, n := range l.Nodes {
		out[i].Node = n
		if n.Role != identity.RoleOrderer {
			continue
		}
		if l.Removed(n.Name) {
			out[i].Removed = true
			continue
		}
		blocks, err := l.ordererChain(ctx, ch, n, check)
		switch {
		case errors.Is(err, ErrDisagree):
			errs = append(errs, err)
		case err != nil:
			out[i].Err = unanswered(n, err)
			v.partial = true
		}
		out[i].Height = uint64(len(blocks))
		for n := len(blocks) - 1; n >= 0; n-- {
			if blocks[n].signed {
				out[i].Signed = uint64(n) + 1
				break
			}
		}
		if err := v.addOrderer(n.Name, blocks); err != nil {
			errs = append(errs, err)
		}
	}
	for i, n := range l.Nodes {
		if n.Role != identity.RolePeer {
			continue
		}
		height, err := l.peerChain(ctx, ch.Channel, n, idle, v)
		out[i].Height = height
		switch {
		case errors.Is(err, ErrDisagree):
			errs = append(errs, err)
		case err != nil:
			out[i].Err = unanswered(n, err)
		}
	}
	for i := range out {
		if h := out[i].Height; h > 0 && h <= uint64(len(v.ref)) {
			out[i].Last = v.ref[h-1].hash
		}
	}
	return out, errors.Join(errs...)
}

// block is what Verify keeps of one block.
type block struct {
	hash   []byte
	ids    []string
	signed bool
}

// verifier holds the reference chain: the longest orderer chain read so
// far, which every other chain must agree with.
type verifier struct {
	ref   []block
	refBy string
	codes [][]byte // block number → the first peer's codes, by position
	codBy string
	// partial is set when an orderer's chain could not be read to its end:
	// a peer's block beyond ref may then be one that orderer holds, and is
	// left unchecked (the orderer's own failure fails Verify).
	partial bool
}

func (v *verifier) addOrderer(name string, blocks []block) error {
	short, long := blocks, v.ref
	if len(blocks) > len(v.ref) {
		short, long = v.ref, blocks
	}
	for n := range short {
		if !bytes.Equal(short[n].hash, long[n].hash) {
			return fmt.Errorf("%w: block %d has header hash %.8x at %s and %.8x at %s", ErrDisagree, n, blocks[n].hash, name, v.ref[n].hash, v.refBy)
		}
	}
	if len(blocks) > len(v.ref) {
		v.ref, v.refBy = blocks, name
	}
	return nil
}

// ordererChain reads and checks every block orderer n has, as a client of
// the network's first org.
func (l *Layout) ordererChain(ctx context.Context, ch *node.ChannelConfig, n Node, check func(*api.Block, []byte) ([]byte, error)) ([]block, error) {
	c, err := l.Client(l.Orgs()[0])
	if err != nil {
		return nil, err
	}
	tlsCfg, err := node.ClientTLS(ch, c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(n.Address, grpc.WithTransportCredentials(credentials.NewTLS(node.ExpectServer(tlsCfg, identity.RoleOrderer))),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(api.MaxBlockMessage)))
	if err != nil {
		return nil, fmt.Errorf("localnet: %s: %w", n.Name, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	stream, err := api.NewOrdererClient(conn).Deliver(ctx, &api.DeliverRequest{Channel: ch.Channel, Start: 0, Stop: true})
	if err != nil {
		return nil, fmt.Errorf("localnet: blocks of %s: %w", n.Name, err)
	}
	var blocks []block
	var prev []byte
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return blocks, nil
		}
		if err != nil {
			return blocks, fmt.Errorf("localnet: blocks of %s after %d: %w", n.Name, len(blocks), err)
		}
		b, err := api.DecodeBlock(resp.GetBlock())
		if err == nil && b.GetHeader().GetNumber() != uint64(len(blocks)) {
			err = fmt.Errorf("block %d sent as block %d", b.GetHeader().GetNumber(), len(blocks))
		}
		if err == nil {
			prev, err = check(b, prev)
		}
		if err != nil {
			return blocks, fmt.Errorf("%w: orderer %s: %w", ErrDisagree, n.Name, err)
		}
		blk := block{hash: prev, signed: b.GetMetadata().GetSignature() != nil}
		if len(blocks) > 0 { // block 0 holds the genesis document, no transaction
			for _, raw := range b.Transactions {
				if api.IsConfigEnvelope(raw) { // a config block (orderer set update)
					env, _, err := api.DecodeConfigEnvelope(raw)
					if err != nil {
						return blocks, fmt.Errorf("%w: orderer %s: block %d: %w", ErrDisagree, n.Name, len(blocks), err)
					}
					blk.ids = append(blk.ids, env.ID())
					continue
				}
				if api.IsMembersEnvelope(raw) { // a membership update (revocation lists)
					blk.ids = append(blk.ids, api.MembersID(raw))
					continue
				}
				tx, _, err := api.DecodeTx(raw)
				if err != nil {
					return blocks, fmt.Errorf("%w: orderer %s: block %d: %w", ErrDisagree, n.Name, len(blocks), err)
				}
				blk.ids = append(blk.ids, tx.ID())
			}
		}
		blocks = append(blocks, blk)
	}
}

// peerChain reads peer n's block events and checks them against the
// reference chain and the other peers' codes; it returns n's height.
func (l *Layout) peerChain(ctx context.Context, channel string, n Node, idle time.Duration, v *verifier) (uint64, error) {
	reader, err := l.ConnectReader(n)
	if err != nil {
		return 0, err
	}
	defer reader.Close()
	conn := reader.OnChannel(channel)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if v.codBy == "" {
		v.codes, v.codBy = make([][]byte, len(v.ref)), n.Name
	}
	var bad error
	height, err := conn.events(ctx, idle, func(ev *api.BlockEvent) {
		if bad == nil {
			bad = v.peerBlock(n.Name, ev.GetNumber(), ev.GetTxIds(), ev.GetCodes())
		}
	})
	if bad != nil {
		return height, bad
	}
	return height, err
}

// peerBlock checks one block as peer reports it: the orderers' transactions
// in their order, and, position by position, the codes the first peer gave.
// Codes are compared by position, not by tx id: an id ordered twice (a
// client's retry that reached two orderers) is VALID at its first position
// and DUPLICATE_TXID at the next, on every peer.
func (v *verifier) peerBlock(peer string, num uint64, ids []string, codes []byte) error {
	switch {
	case num == 0: // the genesis block holds no transaction
		return nil
	case num >= uint64(len(v.ref)) && v.partial:
		return nil
	case num >= uint64(len(v.ref)):
		return fmt.Errorf("%w: peer %s has block %d, beyond every orderer's height %d", ErrDisagree, peer, num, len(v.ref))
	case !slices.Equal(ids, v.ref[num].ids):
		return fmt.Errorf("%w: peer %s block %d holds transactions %v, the orderers' block %d holds %v", ErrDisagree, peer, num, ids, num, v.ref[num].ids)
	case len(codes) != len(ids):
		return fmt.Errorf("%w: peer %s block %d: %d codes for %d transactions", ErrDisagree, peer, num, len(codes), len(ids))
	}
	if peer == v.codBy {
		v.codes[num] = codes
		return nil
	}
	want := v.codes[num]
	if want == nil { // the first peer had not reached this block
		return nil
	}
	for i, code := range codes {
		if code != want[i] {
			return fmt.Errorf("%w: tx %s at position %d of block %d is %v at peer %s, %v at peer %s", ErrDisagree, ids[i], i, num,
				api.TxValidationCode(code), peer, api.TxValidationCode(want[i]), v.codBy)
		}
	}
	return nil
}
