// Package ledger is strand's block store: the hash-chained blocks a peer
// has committed, kept in append-only segment files, with an index from
// block number and transaction id to where they are stored. (The state
// database lives in ledger/statedb.)
//
// # Files
//
// Blocks live in dir/blocks/ in segment files named 000000.seg,
// 000001.seg, ... A segment is rolled over when the next frame would take
// it past Options.SegmentSize (a frame larger than that goes alone into a
// fresh segment). Each block is one frame, integers little endian:
//
//	u32 length | u32 CRC-32C (Castagnoli) of the next length bytes | u64 block number | raw block
//
// length counts the block number and the raw bytes. The raw bytes are the
// encoded api.Block exactly as the caller handed it over, validation codes
// included.
//
// The index is a Pebble database in dir/index: block number → (segment,
// offset, frame size); tx id → (block, tx index, validation code); and a
// record of the last indexed block with the end of its frame. The index is
// derived data and is never fsynced: the fsync of the segment files is the
// store's only durability point.
//
// # Invariants
//
// Blocks are numbered from the base B (0, unless the store was created
// from a snapshot) and stored contiguously: frame i of the store (counting
// across segments in order) holds block B+i, and block n's header names
// the header hash of block n-1 as its previous hash (for block B: the
// base's previous hash).
//
// # Base
//
// CreateBase makes a store that starts at a base height B taken from a
// snapshot (see base.go for the file): blocks below B are absent (RawBlock,
// Block and Iterator say so with ErrBeforeBase), Height and LastHash start
// at B and the hash of block B-1, and TxLocation answers for the tx ids
// committed below B, which the base file lists and the index holds like
// any other. The base file never changes; a rebuilt index reads it again.
//
// Append writes every frame of its slice, fsyncs once (group commit), then
// commits the index entries of all its blocks in one unsynced Pebble batch,
// and only then publishes the new height. So a reader that sees height h
// finds blocks 0..h-1 fully written and indexed; it never sees a frame that
// is still being written. Readers (RawBlock, Block, Iterator, TxLocation,
// Height, LastHash) run concurrently with the one appender; Append calls
// are serialized. Before writing anything Append checks that the entries
// continue the chain (ErrOutOfOrder, ErrChainBroken), so a refused Append
// changes nothing.
//
// A write or fsync failure is sticky: the store truncates the segment back
// to its previous end on a best-effort basis, keeps serving the blocks it
// had published, and refuses every later Append. After an fsync error the
// contents of the page cache are unknown, so the only safe way forward is
// to Close and reopen, which repairs the tail from what is on disk.
//
// An index entry for a transaction id is written for every non-empty id
// whose validation code claims it (api.TxIDCounts: the creator's signature
// verified, and not DUPLICATE_TXID), so the first signed occurrence of an
// id stays the indexed one (the validator marks later ones) and a rebuilt
// index holds exactly the ids the live one did. The Entry handed to Append must agree with its Raw bytes: Append
// does not decode Raw (it runs thousands of times a second); a build with
// the "invariants" tag checks it.
//
// # Recovery
//
// OpenBlockStore reads the last-indexed record and checks that the indexed
// frame it names is intact; then it scrubs the indexed frames (below). If
// both hold, it scans from the end of that frame to
// the end of the last segment; otherwise (no index, or an index that is
// ahead of or inconsistent with the segments) it clears the index and
// scans every segment from the start. Each scanned frame must have a
// plausible length, a matching CRC and the next block number, and its
// block must decode, carry that number in its header, link to the
// previous block's header hash and match its data hash. Scanned blocks are
// indexed (tx ids from api.DecodeTx(raw).ID(), taken even when the rest of
// the transaction does not decode; codes from the block metadata, missing
// codes read as NOT_VALIDATED).
//
// A bad frame is one of two things, and the store never confuses them:
//
//   - A torn tail: the last write of the newest segment was cut short by a
//     crash, so no sound frame (plausible length, matching CRC, a block
//     number above the expected one) follows it anywhere in the store.
//     Only then is the store cut: the segment is truncated at the bad
//     frame (and any later, frameless segments emptied), and the cut
//     (segment, offset, bytes, reason) is reported in Stats().LastRepair
//     and logged at WARN. If the cut bytes are neither an incomplete frame
//     nor zeros — a complete last frame that fails its checks — they are
//     first copied to dir/quarantine/SEGMENT-OFFSET, durably, and logged
//     at ERROR: nothing is deleted that is not kept.
//   - Damage: a sound frame follows it (resync searches byte by byte,
//     across segments). The blocks whose frames lie in the bad bytes are
//     damaged (see Damage); the scan goes on after them, and no valid
//     block is dropped, wherever the segment boundaries fall.
//
// # Damage and replacement
//
// A damaged block counts in the height; reads of it (RawBlock, Block,
// Iterator, VerifyChain) fail with ErrCorrupt naming the segment, the
// offset and the reason, and every other block reads as before. Damaged
// lists them, Options.Logger gets one ERROR line each, and the index
// gives each an entry of size 0 (which no read accepts) so that the next
// open finds it again without a rebuild. The link from a damaged block's
// successor to it cannot be checked until the block is replaced.
//
// Damage behind an intact index is found by the scrub: at open, every
// indexed frame is read back and its CRC and number checked (not decoded:
// that is VerifyChain's and Check's job). It reads the whole store once
// per open; Options.SkipScrub turns it off.
//
// Replace stores a good copy of a damaged block (the caller fetched and
// validated it: committer.Repair) in dir/replaced/NUMBER.frame, one frame
// in the segment format, written to a temporary file, fsynced and renamed
// into place, and only then named by the index; the damaged bytes stay
// where they are. Replace checks the copy's links to both neighbours, so
// the hash chain holds across it. A replacement is used at open when the
// index names it, and also when it does not (a crash after the rename
// lost the unsynced index entry, or the index was rebuilt): the scrub and
// the scan look for the replacement file of every damaged block and use
// it if its frame is sound and it continues the chain. So a crash at any
// point of a repair leaves the block either damaged or replaced.
//
// Check verifies a stopped store without changing it (strand ledger
// check).
//
// # Caller's duties
//
// One process opens a directory at a time (the index's lock enforces it).
// Entries must be validated blocks: Number, hashes, tx ids and codes as
// described on Entry. Options.NoSync is for tests and benchmarks only: with
// it a machine crash can lose blocks that Append reported stored.
package ledger
