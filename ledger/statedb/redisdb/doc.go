// Package redisdb is a statedb backend on a Redis server (redis-server,
// reached over TCP, TLS or a unix socket): FlexChain's memory tier kept in
// a separate, widely run in-memory store, as an alternative to strand
// memnode, for a user who already runs Redis.
//
// Every key of one state database starts with its prefix
// (Options.Prefix, by default derived from the directory), so that
// several peers may share a server:
//
//	<prefix>k<encoded key>      → encoded value (statedb's key and value encodings)
//	<prefix>k\x00savepoint      → the savepoint (statedb.SavepointKey, 8 bytes big-endian)
//	<prefix>idx                 → sorted set of the encoded state keys, all score 0 (ordered scans: ZRANGEBYLEX)
//
// Redis may lose data (no AOF, a restart, FLUSHALL, a failover to a
// replica that was behind); strand's rule holds all the same: the block
// store is the truth. The savepoint is written in the same MULTI/EXEC as
// the batch it ends, so what the server holds is always the whole state
// of the height its savepoint names (absent: height 0, empty). The fence
// keeps a server that lost state from passing old state off as current:
//
//   - applied is the height this DB last had acknowledged (or found at
//     Open). Apply WATCHes the savepoint, checks that it is still
//     applied, and only then writes (MULTI/EXEC): a server that lost the
//     blocks above some height refuses nothing by itself, so the check is
//     here, and a loss fails Apply with statedb.ErrStateLost.
//   - Every read fetches the savepoint with its keys in one MGET (one
//     atomic command), or, for a scan's page of the index, after it on
//     the same connection; an answer whose savepoint is not applied is
//     refused with statedb.ErrStateLost. Writes of this DB hold the write
//     lock, reads the read lock, so only a loss can move the savepoint
//     under a read, and a loss never moves it back up: a savepoint equal
//     to applied after a read proves that nothing was lost before it.
//   - After a loss, Savepoint asks the server again and starts over at
//     the height it holds; the caller (the committer's restore) then
//     re-applies the blocks above it from the block store.
//   - A server that evicts keys under memory pressure would lose state
//     that the savepoint does not show: Open refuses a server whose
//     maxmemory is set with a maxmemory-policy other than noeviction
//     (where CONFIG GET is allowed).
//
// Durability is the server's: Apply's sync is not stronger than what its
// persistence (appendonly, appendfsync) keeps, and needs none.
//
// Caller's duties, beyond statedb's: Apply is serialised (one committer
// per prefix: a second writer is refused once it writes at another height
// than the first); a Scan callback must not call the database (a read
// inside it could wait behind a waiting Apply, which waits for the Scan).
package redisdb
