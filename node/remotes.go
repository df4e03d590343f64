package node

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"google.golang.org/grpc"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/mux"
)

// remoteEndorsers keeps a peer's gateway's map of the other orgs' peers
// (gateway.Config.Remote) in step with the channel's membership in
// force at the committed height (identity.Registry.Revocations):
//
//   - a member org's peers are those of the channel file for a genesis
//     org, those of the membership update that added it
//     (api.MembersOrg.Peers, signed with the rest of the update) for an
//     added one;
//   - an org that is not a member (removed, or not yet added) has none,
//     and its connections are closed: an org's name is never reused
//     (identity.ErrOrgRemoved), so nothing dials them again.
//
// Connections use the peer's client TLS, which follows the membership
// too (WithRevocation): an added org's peer is checked against its TLS
// CAs from the update. update runs at start and from the committer
// (committer.OnMembers), after the block that changes the membership is
// committed and before its subscribers hear of it.
type remoteEndorsers struct {
	local   string
	channel *ChannelConfig
	reg     *identity.Registry
	dial    func(addr string) (*mux.Conn, error)
	log     *slog.Logger

	mu struct {
		sync.Mutex
		set   func(map[string][]api.EndorserClient) error // the gateway's SetRemote; nil until follow
		orgs  map[string]*remoteOrg                       // member orgs dialled
		close bool
	}
}

// remoteOrg is one org's dialled peers.
type remoteOrg struct {
	clients []api.EndorserClient
	conns   []*mux.Conn
}

// newRemoteEndorsers dials the peers of the other member orgs in force
// now; current returns them for the gateway's starting Config.Remote.
func newRemoteEndorsers(ch *ChannelConfig, local string, reg *identity.Registry, creds grpc.DialOption, log *slog.Logger) (*remoteEndorsers, error) {
	r := &remoteEndorsers{local: local, channel: ch, reg: reg, log: log,
		dial: func(addr string) (*mux.Conn, error) { return dialNode(addr, creds) }}
	r.mu.orgs = map[string]*remoteOrg{}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.syncLocked(); err != nil {
		r.closeLocked()
		return nil, err
	}
	return r, nil
}

// current returns the other member orgs' peers, by org, in preference
// order (the channel file's, or the update's, order).
func (r *remoteEndorsers) current() map[string][]api.EndorserClient {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mapLocked()
}

func (r *remoteEndorsers) mapLocked() map[string][]api.EndorserClient {
	m := make(map[string][]api.EndorserClient, len(r.mu.orgs))
	for org, o := range r.mu.orgs {
		m[org] = slices.Clip(o.clients)
	}
	return m
}

// follow has update hand each new map to set (the gateway's SetRemote).
func (r *remoteEndorsers) follow(set func(map[string][]api.EndorserClient) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.set = set
}

// update brings the map to the membership in force now and hands it to
// the gateway. It is called once at start, after follow, and by the
// committer after each block that changes the membership; whatever the
// interleaving, the last call leaves the latest membership's map.
func (r *remoteEndorsers) update() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.close {
		return
	}
	if err := r.syncLocked(); err != nil {
		r.log.Error("following the channel's membership: dialling an org's peers", "err", err)
	}
	if r.mu.set != nil {
		if err := r.mu.set(r.mapLocked()); err != nil {
			r.log.Error("following the channel's membership: the gateway refused the other orgs' peers", "err", err)
		}
	}
}

// syncLocked dials the peers of every other member org it has not yet
// dialled and closes those of orgs that are no longer members. It goes
// on past an org it cannot dial, and returns the first such error.
func (r *remoteEndorsers) syncLocked() error {
	rv := r.reg.Revocations()
	members := r.reg.MembersUnder(rv)
	for org, o := range r.mu.orgs {
		if !slices.Contains(members, org) {
			for _, c := range o.conns {
				c.Close()
			}
			delete(r.mu.orgs, org)
			r.log.Info("no longer asking an org's peers to endorse: it is not a member", "org", org, "membership", rv.Sequence())
		}
	}
	added := map[string][]api.MembersPeer{}
	for _, d := range rv.Added() {
		added[d.ID] = d.Peers
	}
	var errs []error
	for _, org := range members {
		if org == r.local || r.mu.orgs[org] != nil {
			continue
		}
		var peers []api.MembersPeer
		if ps, ok := added[org]; ok {
			peers = ps
		} else {
			for _, pe := range r.channel.PeersOf(org) {
				peers = append(peers, api.MembersPeer{Name: pe.Name, Address: pe.Address})
			}
		}
		if len(peers) == 0 {
			continue // an orderer org, or an added org that named no peer
		}
		o := &remoteOrg{}
		for _, pe := range peers {
			conn, err := r.dial(pe.Address)
			if err != nil {
				errs = append(errs, fmt.Errorf("peer %s of org %s: %w", pe.Name, org, err))
				continue
			}
			o.conns = append(o.conns, conn)
			o.clients = append(o.clients, gateway.BatchProposals(gateway.NamedEndorser(pe.Name, api.NewEndorserClient(conn))))
		}
		if len(o.clients) > 0 {
			r.mu.orgs[org] = o
			if _, ok := added[org]; ok {
				r.log.Info("asking an added org's peers to endorse", "org", org, "peers", len(o.clients), "membership", rv.Sequence())
			}
		}
	}
	return errors.Join(errs...)
}

// close closes every connection; update does nothing after it.
func (r *remoteEndorsers) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeLocked()
}

func (r *remoteEndorsers) closeLocked() {
	r.mu.close = true
	for _, o := range r.mu.orgs {
		for _, c := range o.conns {
			c.Close()
		}
	}
	r.mu.orgs = nil
}
