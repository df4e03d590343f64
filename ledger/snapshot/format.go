package snapshot

import (
	"errors"
	"fmt"

	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// Version is the file format version this package writes and reads.
const Version = 1

const (
	magic = "strand-snapshot\n"
	// sumSize is the size of the trailing SHA-256.
	sumSize = 32
	// headSize is the size of magic and version.
	headSize = len(magic) + 4

	tagHeader = 'H'
	tagState  = 'S'
	tagTx     = 'T'
	tagEnd    = 'E'

	// maxRecord bounds a record's payload: a state value, or the genesis
	// block.
	maxRecord = 64 << 20
	// maxTxID bounds a tx id.
	maxTxID = 1 << 16
	// maxChannel bounds a channel name.
	maxChannel = 1 << 10
)

// Errors of Read and Verify; test with errors.Is.
var (
	// ErrCorrupt: the file is not a snapshot, is truncated, fails its
	// checksum, or breaks the format's rules.
	ErrCorrupt = errors.New("snapshot: corrupt file")
	// ErrVersion: the file is a snapshot of a format version this binary
	// does not read.
	ErrVersion = errors.New("snapshot: unsupported format version")
)

// Info describes a snapshot file.
type Info struct {
	Channel  string // channel name
	Genesis  []byte // encoded block 0: the channel's configuration
	Height   uint64 // N: the snapshot holds the ledger after blocks 0..N-1
	PrevHash []byte // header hash of block N-1
	States   uint64 // keys in the state
	TxIDs    uint64 // tx ids committed below N
	Size     int64  // bytes in the file
	SHA256   []byte // the file's checksum, as stored in its last 32 bytes
}

func (in Info) String() string {
	return fmt.Sprintf("channel %q at height %d (last block hash %x): %d keys, %d tx ids, %d bytes, sha256 %x",
		in.Channel, in.Height, in.PrevHash, in.States, in.TxIDs, in.Size, in.SHA256)
}

// Visitor receives the records of a file. A nil func skips its records.
type Visitor struct {
	State func(ns, key string, v statedb.Value) error
	Tx    func(t ledger.TxRecord) error
}
