package node

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/snapshot"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
)

// A peer's ledger lives in its data directory: the block store in
// blocks/ and the state database in state/. Snapshots (package
// ledger/snapshot) move a ledger between peers: ExportSnapshot writes one
// from a stopped peer's data directory, Peer.ExportSnapshot from a running
// peer, and JoinSnapshot fills a fresh data directory from one, so that
// the peer, once started, follows the ordering service from the
// snapshot's height instead of block 0.

// ExportSnapshot writes a snapshot of the ledger in the data directory of
// the peer cfg describes, which must not be running (its block store is
// locked while it runs; use Peer.ExportSnapshot in the process instead).
func ExportSnapshot(cfg *NodeConfig, path string) (snapshot.Info, error) {
	if cfg.Role != "peer" {
		return snapshot.Info{}, fmt.Errorf("node: %s is a %s; only a peer's ledger has a state to snapshot", cfg.Name, cfg.Role)
	}
	ch, err := loadOnlyChannel(cfg, "snapshot")
	if err != nil {
		return snapshot.Info{}, err
	}
	if !backend.Persistent(cfg.StateDB.Backend) {
		return snapshot.Info{}, fmt.Errorf("node: stateDB.backend %q keeps no state on disk: export from the running peer instead", cfg.StateDB.Backend)
	}
	storeDir := filepath.Join(cfg.DataDir, "blocks")
	if _, err := os.Stat(storeDir); err != nil {
		return snapshot.Info{}, fmt.Errorf("node: no ledger to export in %s: %w", cfg.DataDir, err)
	}
	lock, err := lockDataDir(cfg.DataDir, cfg.Name)
	if err != nil {
		return snapshot.Info{}, fmt.Errorf("%w (a stopped peer's data directory is exported; `strand snapshot export` cannot read a running one)", err)
	}
	defer lock.release()
	store, err := ledger.OpenBlockStore(storeDir, ledger.Options{})
	if err != nil {
		return snapshot.Info{}, err
	}
	defer store.Close()
	db, err := cfg.openStateDB(filepath.Join(cfg.DataDir, "state"))
	if err != nil {
		return snapshot.Info{}, err
	}
	defer db.Close()
	return snapshot.Export(path, snapshot.Source{Channel: ch.Channel, Store: store, State: db})
}

// ExportSnapshot writes a snapshot of the running peer's ledger (of its
// first channel) to path, at the height its state has reached; the peer
// keeps committing.
func (p *Peer) ExportSnapshot(path string) (snapshot.Info, error) {
	return snapshot.Export(path, snapshot.Source{Channel: p.channels.list()[0].name, Store: p.Store, State: p.State})
}

// JoinSnapshot fills the fresh data directory of the peer cfg describes
// from the snapshot at path: the state at the snapshot's height N and a
// block store that starts at N. The snapshot must be of the peer's
// channel (same genesis block). Start the peer afterwards as usual. If
// JoinSnapshot fails it removes what it wrote.
func JoinSnapshot(cfg *NodeConfig, path string) (snapshot.Info, error) {
	if cfg.Role != "peer" {
		return snapshot.Info{}, fmt.Errorf("node: %s is a %s; only a peer joins a channel from a snapshot", cfg.Name, cfg.Role)
	}
	ch, err := loadOnlyChannel(cfg, "snapshot")
	if err != nil {
		return snapshot.Info{}, err
	}
	if err := cfg.CheckChannel(ch); err != nil {
		return snapshot.Info{}, err
	}
	if !backend.Persistent(cfg.StateDB.Backend) {
		return snapshot.Info{}, fmt.Errorf("node: stateDB.backend %q keeps no state on disk, so a peer joined from a snapshot would lose it at restart; "+
			"choose one of the on-disk backends", cfg.StateDB.Backend)
	}
	storeDir, stateDir := filepath.Join(cfg.DataDir, "blocks"), filepath.Join(cfg.DataDir, "state")
	for _, d := range []string{storeDir, stateDir} {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			return snapshot.Info{}, fmt.Errorf("node: %s already exists: a peer joins from a snapshot with a fresh data directory (dataDir %s)", d, cfg.DataDir)
		}
	}
	lock, err := lockDataDir(cfg.DataDir, cfg.Name)
	if err != nil {
		return snapshot.Info{}, err
	}
	defer lock.release()
	tmp := stateDir + ".joining"
	if err := os.RemoveAll(tmp); err != nil {
		return snapshot.Info{}, fmt.Errorf("node: %w", err)
	}
	info, err := joinInto(cfg, ch, path, storeDir, tmp)
	if err == nil {
		err = os.Rename(tmp, stateDir)
	}
	if err != nil {
		os.RemoveAll(tmp)
		os.RemoveAll(storeDir)
		return snapshot.Info{}, err
	}
	return info, nil
}

func joinInto(cfg *NodeConfig, ch *ChannelConfig, path, storeDir, stateDir string) (snapshot.Info, error) {
	db, err := cfg.openStateDB(stateDir)
	if err != nil {
		return snapshot.Info{}, err
	}
	info, err := snapshot.Load(path, snapshot.Target{StoreDir: storeDir, State: db, Check: func(in snapshot.Info) error {
		return checkSnapshotChannel(ch, path, in)
	}})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return info, err
}

// checkSnapshotChannel refuses a snapshot of another channel: its name
// and its genesis block must be the peer's.
func checkSnapshotChannel(ch *ChannelConfig, path string, in snapshot.Info) error {
	if in.Channel != ch.Channel {
		return fmt.Errorf("node: snapshot %s is of channel %q; this peer's channel is %q", path, in.Channel, ch.Channel)
	}
	b, err := api.DecodeBlock(in.Genesis)
	if err != nil || b.Header == nil || b.Header.Number != 0 {
		return fmt.Errorf("node: snapshot %s: its genesis block does not decode as block 0 (%v)", path, err)
	}
	want := ch.Genesis()
	if len(b.Transactions) != 1 || !bytes.Equal(b.Transactions[0], want) {
		var got []byte
		if len(b.Transactions) > 0 {
			got = b.Transactions[0]
		}
		return fmt.Errorf("node: snapshot %s holds channel %q with config hash %.16x; this peer's channel file %s has %.16x: "+
			"the snapshot was taken on a differently configured channel", path, in.Channel, sha256.Sum256(got), ch.file, sha256.Sum256(want))
	}
	return nil
}

// loadOnlyChannel loads the channel of a node configured with one
// (channel); what is not yet done per channel of a peer configured with
// channels (what) is refused by name.
func loadOnlyChannel(cfg *NodeConfig, what string) (*ChannelConfig, error) {
	if len(cfg.Channels) > 0 {
		return nil, fmt.Errorf("%w: %s: a %s of a peer configured with channels (several) is not supported yet; configure one channel (channel)", ErrConfig, cfg.file, what)
	}
	return LoadChannel(cfg.Channel)
}
