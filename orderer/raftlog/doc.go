// Package raftlog is the durable storage of one orderer's Raft node: the
// log entries, the hard state (term, vote, commit) and the latest
// snapshot, in one append-only file that survives SIGKILL.
//
// # Why our own and not etcd's wal/snap
//
// go.etcd.io/etcd/server/v3/storage/wal drags in etcd's server module
// (zap, bbolt, grpc-gateway, prometheus client, ...) for a job that is
// small here: a strand snapshot is not a state-machine image but two
// numbers (the block height and the hash of the last block, see
// orderer's package documentation), because the blocks themselves are
// already durable in the orderer's ledger.BlockStore. So the log stays
// short (it is compacted behind every snapshot) and one file with
// checksummed frames, the same technique as ledger's segments, does it.
//
// # Format
//
// The file raft.wal is a sequence of frames:
//
//	length uint32 (big endian; of type + payload)
//	crc32c uint32 (Castagnoli; of type + payload)
//	type   byte   (1 entry, 2 hard state, 3 snapshot, 4 compaction)
//	payload       (the protobuf encoding of raftpb.Entry, HardState, Snapshot)
//
// Replaying the frames in order into a raft.MemoryStorage rebuilds the
// state: a snapshot frame replaces everything before it, an entry frame
// appends (an entry whose index is at or below the last one truncates
// the conflicting suffix first, as Raft requires), a hard-state frame
// replaces the hard state, a compaction frame records a snapshot taken
// over entries the log holds (raft.MemoryStorage.CreateSnapshot). Compact
// rewrites the file as a base snapshot frame, the entries kept after the
// compaction point, the compaction frame and the hard state,
// into a temporary file that is fsynced and renamed over the old one
// (then the directory is fsynced), so a crash leaves either file whole.
//
// # Invariants
//
//   - Save returns only after the frames are written and fsynced: the
//     Raft loop may then send messages (etcd raft's Ready contract).
//   - The in-memory storage raft reads (Storage) is updated only after
//     the fsync, so raft never sees state that a crash could take back.
//   - Open truncates the file at the first frame that is incomplete or
//     fails its checksum: that is the torn tail of a Save that had not
//     returned. Everything before it was acknowledged and is kept.
//     Open reports what it cut (Repair); it never panics on bad bytes.
//
// # Caller's duties
//
// A Log is used by one goroutine (the Raft loop), except Stats, which is
// safe from any goroutine. Storage's methods are also only called from
// that goroutine (by raft.RawNode). Close it after the loop has stopped.
package raftlog
