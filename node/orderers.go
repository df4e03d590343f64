package node

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/orderer"
)

// ordererBook is a peer's view of the channel's orderers, in its order
// of preference: the channel file's at first, then the orderer set of
// each config block the peer commits (a config update that added or
// removed an orderer; see orderer's package documentation). The
// follower and the gateway read it for every stream and submission, so
// failover reaches an added orderer and stops trying a removed one.
type ordererBook struct {
	channel string
	reg     *identity.Registry
	first   int // this peer's preferred position (peerIndex)
	dial    func(name, addr string) (api.OrdererClient, error)
	log     *slog.Logger

	mu struct {
		sync.RWMutex
		list  []api.OrdererClient
		addrs []string                     // list's addresses
		conns map[string]api.OrdererClient // by "name@address", kept across updates
		seq   uint64                       // config updates adopted
	}
}

func newOrdererBook(channel string, reg *identity.Registry, first int, dial func(name, addr string) (api.OrdererClient, error), log *slog.Logger) *ordererBook {
	b := &ordererBook{channel: channel, reg: reg, first: first, dial: dial, log: log}
	b.mu.conns = map[string]api.OrdererClient{}
	return b
}

// set makes eps the orderer set, rotated so that this peer prefers the
// one at its position.
func (b *ordererBook) set(eps []OrdererEndpoint) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var list []api.OrdererClient
	var addrs []string
	for i := range eps {
		o := eps[(b.first+i)%len(eps)]
		key := o.Name + "@" + o.Address
		c, ok := b.mu.conns[key]
		if !ok {
			var err error
			if c, err = b.dial(o.Name, o.Address); err != nil {
				return err
			}
			b.mu.conns[key] = c
		}
		list, addrs = append(list, c), append(addrs, o.Org+"/"+o.Name+"@"+o.Address)
	}
	b.mu.list, b.mu.addrs = list, addrs
	return nil
}

// Orderers returns the orderers now, in preference order.
func (b *ordererBook) Orderers() []api.OrdererClient {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.mu.list
}

// observe looks at a block the peer committed (its raw bytes): a config
// block whose update verifies (orderer.VerifyConfigEnvelope) and is the
// next in sequence replaces the orderer set. The cheap test comes first:
// most blocks do not contain the config magic at all.
func (b *ordererBook) observe(raw []byte) {
	if !bytes.Contains(raw, []byte(api.ConfigMagic)) {
		return
	}
	blk, err := api.DecodeBlock(raw)
	if err != nil {
		return
	}
	for _, tx := range blk.Transactions {
		if !api.IsConfigEnvelope(tx) {
			continue
		}
		u, err := orderer.VerifyConfigEnvelope(b.reg, b.channel, tx)
		if err != nil {
			b.log.Warn("config block not adopted: its update does not verify", "block", blk.GetHeader().GetNumber(), "err", err)
			continue
		}
		b.adopt(blk.GetHeader().GetNumber(), u)
	}
}

func (b *ordererBook) adopt(num uint64, u *api.ConfigUpdate) {
	b.mu.RLock()
	seq := b.mu.seq
	b.mu.RUnlock()
	if u.Sequence != seq {
		b.log.Warn("config block not adopted: out of sequence", "block", num, "sequence", u.Sequence, "want", seq)
		return
	}
	eps := make([]OrdererEndpoint, len(u.Orderers))
	for i, o := range u.Orderers {
		eps[i] = OrdererEndpoint{Name: o.Name, Org: o.Org, Address: o.Address, Cluster: o.Address}
	}
	if err := b.set(eps); err != nil {
		b.log.Error("config block not adopted: dialling its orderers", "block", num, "err", err)
		return
	}
	b.mu.Lock()
	b.mu.seq = u.Sequence + 1
	addrs := b.mu.addrs
	b.mu.Unlock()
	b.log.Info("adopted the orderer set of a config block", "block", num, "sequence", u.Sequence+1, "orderers", fmt.Sprint(addrs))
}

// replay adopts the config blocks already in the store (a restarted
// peer). It reads every stored block: fine for the networks strand runs
// today; a config-block index would make it O(config blocks).
func (b *ordererBook) replay(store *ledger.BlockStore) {
	for n := uint64(1); n < store.Height(); n++ {
		raw, err := store.RawBlock(n)
		if err != nil {
			return
		}
		b.observe(raw)
	}
}

// named wraps an orderer client with its name for logs.
func named(name string, c api.OrdererClient) api.OrdererClient { return gateway.NamedOrderer(name, c) }
