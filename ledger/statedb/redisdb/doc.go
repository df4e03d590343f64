// Package redisdb is a statedb backend on a Redis server (redis-server,
// reached over TCP or a unix socket): FlexChain's memory tier kept in a
// separate, widely run in-memory store, as an alternative to strand
// memnode.
//
// It implements engine.Engine and leaves the statedb contract to package
// engine (shared layout, input checks, the Close protocol). Every key of
// one state database starts with its prefix (Options.Prefix, by default
// derived from the directory), so that several peers may share a server:
//
//	<prefix>k<encoded key>  → encoded value (statedb's layout; the savepoint too)
//	<prefix>idx             → sorted set of the encoded keys, all score 0 (ordered scans: ZRANGEBYLEX)
//
// Invariants:
//   - A batch and its savepoint are written in ONE MULTI/EXEC
//     transaction, values and index together: Redis runs it whole, so
//     no reader of the server sees half of it.
//   - A read (Get, GetMany, Scan) sees one point in time: Redis has no
//     snapshots, so a read holds this process's read lock for its length
//     and Write its write lock. Only this process writes the prefix (one
//     committer per state database).
//   - Durability is the server's: what survives a redis-server restart
//     is what its persistence (appendonly, appendfsync) keeps. Apply's
//     sync is not stronger than that. The block store stays the truth:
//     a peer whose Redis lost state re-applies from its savepoint.
//
// Caller's duties, beyond statedb's: a Scan callback must not call the
// database (a read inside it could wait behind a waiting Apply, which
// waits for the Scan).
package redisdb
