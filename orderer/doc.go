// Package orderer is strand's ordering service for one channel: it admits
// signed transactions, cuts them into blocks, hash-chains and signs the
// blocks, persists them, and delivers them to peers. With Config.Raft
// nil it is a single-node orderer; with Config.Raft set it is one member
// of a Raft cluster (see "Raft" below), and Raft slots in between the
// cutter and seal.
//
// A process that orders several channels runs one Orderer per channel
// (each its own cutter, store, Raft group and log) behind one gRPC
// server: Channels (channels.go) routes every call to its channel's
// Orderer, and ClusterConns (clusterconns.go) gives every channel's Raft
// transport the process's one connection to each other orderer, over
// which each channel's Raft messages travel on a stream named by
// ChannelHeader. docs/channels.md has the routing table.
//
//	Submit (caller's goroutine, all cores): decode, channel, creator, signature
//	   │ bounded queue (Config.Queue; full → ErrOverloaded, never blocks)
//	   ▼
//	loop (one goroutine): drives cut.Flow (the decisions); block mode: one timer at Flow.Deadline;
//	   │                  stream mode: calls Flow.Idle when nothing is in flight
//	   │ cut batches                                ▲
//	   ▼                                            │ idle (stream mode, from persist)
//	seal (one goroutine): number, previous hash, data hash, orderer signature, encode
//	   │ sealed blocks
//	   ▼
//	persist (one goroutine): Store.Append of every ready block, one fsync per group
//	   │ broadcast
//	   ▼
//	Deliver (any number): read the store from start, then wait for the next broadcast
//
// # The decisions: package cut
//
// Where blocks end is decided by package cut and nothing else decides:
// no goroutine, clock or I/O there; time is an argument. Its Flow is the
// loop's decision core (a Cutter, the pending tx ids, config updates cut
// alone, the pacing hold); the loop is its I/O side, which reads the
// clock, arms the one timer Flow.Deadline asks for, counts the batches in
// flight and hands the batches on. cut.Config.Mode picks one of two
// policies, both pinned by the script tests in cut/testdata:
//
//   - cut.ModeBlock (the default) uses Fabric's three parameters (MaxTxs,
//     MaxBytes, Timeout): a block is cut when full or Timeout after its
//     first transaction. Idle cuts nothing.
//   - cut.ModeStream (StreamChain's idea) cuts the pending transactions as
//     soon as the next stage can take them: Flow.Idle returns them, so a
//     block holds one transaction under light load and, under heavy load,
//     everything that arrived while seal was busy. Add still cuts at
//     MaxTxs/MaxBytes; there is no timer unless a pacing hold is on.
//
// # Stream mode: who calls Idle, and when
//
// "Idle" means nothing is in flight: every batch the loop sent downstream
// is a durable block (appended and fsynced by persist), as in StreamChain,
// where a new block is cut when the pipeline can take it. The loop counts
// the batches it sends (Orderer.inSeal); persist counts them down after
// each group's fsync (seal does, for a batch it could not seal), and at
// zero wakes the loop on a channel of capacity 1 (a non-blocking send, so
// persist never waits on the loop and a wake-up is never lost). After
// every event (a transaction, a wake-up) the loop checks the count and, at
// zero, calls Flow.Idle and sends what it returns. So at low load each
// transaction is cut at once, with no timer; under load the next batch
// grows inside the core while the previous block is signed and fsynced,
// which is what keeps throughput. Batches that Add cuts because they are
// full (MaxTxs/MaxBytes) are sent at once even while others are in
// flight, as in block mode.
//
// # Pacing by the peers
//
// The orderer's own pipeline frees up in a fraction of a millisecond, so
// under load Idle alone cuts blocks of a few transactions, and the peers,
// which pay per block (a signature check, a block-store append and fsync,
// a state batch), fall behind on the same cores. So the next stage is
// also the peers: each gateway reports its peer's committed height with
// every submit (SubmitRequest.peer_height, unsigned and advisory) and,
// while it submits, after every block its peer commits (an empty
// SubmitBatch: under a closed-loop load the next submits wait for the
// very commits a hold waits for, so reports riding on submits alone let
// nine holds in ten run to the limit). While a peer that reported within
// cut.PaceFresh is more than cut.PaceBacklog blocks short of the blocks
// cut so far, Flow.Idle holds the pending batch (Metrics.Paced counts holds,
// Metrics.PacedToLimit those that ran out). A report that the peer caught
// up wakes the loop (through idle, while holding is set); a hold lasts at
// most cut.PaceMaxHold, so a report that never comes, or a wrong one, costs
// at most that much latency. At low load every peer is up to date when the next
// transaction arrives (its client waited for the commit), so nothing is
// held; under load blocks grow to what the peers can take. A single node
// only: in a Raft cluster the reports reach whichever member the gateway
// called, and the leader cuts as before.
//
// A process's channels share one cut.Pacer (Config.Pacer): a peer's
// backlog is its blocks not yet committed summed over every channel it
// reported on lately, since one peer process commits them all on the same
// cores, and each channel's Flow tells the Pacer the blocks it cuts. With
// a Pacer per channel, three channels under load each kept a block in
// flight at the peer, cut three times as many blocks as one channel did
// for the same transactions, and paid the per-block costs three times.
// Every report wakes every channel's loop that holds a cut. Since a low
// height in a peer's name would hold back every channel that peer serves,
// a report counts under the caller's TLS certificate, which must be a
// peer's of the channel; any other caller's report is dropped
// (Metrics.ReportsRefused).
//
// # Invariants
//
//   - Ordering is the loop's alone: transactions are cut in the order the
//     loop took them from the queue, and the loop never hashes, signs,
//     waits for a fsync, or reads a clock inside the core's decisions.
//   - Blocks are numbered consecutively from Store.Height() at New and
//     each names the header hash (api.HeaderHash) of the one before; block
//     0 has no previous hash. The data hash is api.DataHash of the
//     transactions' exact bytes as submitted; the orderer signs the header
//     hash. This is exactly what committer.Deliver checks.
//   - The orderer fills in no validation decisions: its blocks carry
//     NOT_VALIDATED for every transaction, in the metadata and in the
//     store's index, and peers overwrite them.
//   - A block is visible (Height, Deliver) only after Store.Append has
//     returned, i.e. after its fsync: nothing delivered is lost in a crash.
//     A Raft member appends without the fsync (AppendNoSync): what it
//     delivers is determined by its Raft log, fsynced on a majority before
//     the block was applied, so a machine crash that cuts blocks off the
//     store's tail is repaired by applying those entries again, to the
//     same headers; the store is synced before the log is compacted. This
//     takes one fsync per block off each member's commit path.
//   - Durability: Submit returning nil means admitted, not durable
//     (with Raft: admitted at the leader, not committed). A
//     transaction is durable once its block is appended; a crash before
//     that loses it, and the client, which learns of commits from the
//     peers, resubmits. Close persists everything admitted before it.
//   - A storage failure is sticky: the orderer stops storing (ErrFailed
//     from Submit, Close returns it) and must be restarted; New resumes
//     from what the store holds.
//
// # Raft
//
// A cluster member runs the same pipeline with one more goroutine, the
// Raft loop (raft.go), which alone drives an etcd raft.RawNode:
//
//	Submit ── follower: forward to the leader (Cluster.Forward) ──┐
//	   │ leader                                                   ▼
//	loop (cut.Flow, leader only in effect) ── cut batch ──▶ Raft loop: Propose
//	                                                         │ Ready: 1 log.Save (fsync)
//	                                                         │        2 send messages
//	                                                         │        3 apply committed entries
//	                                                         │        4 Advance
//	                                                         ▼
//	seal (this member's signature) ──▶ persist (BlockStore) ──▶ Deliver
//
// In detail:
//
//   - Storage: package raftlog (one CRC-framed file, fsync per Ready,
//     torn tails truncated on open). A Raft snapshot is only "block height
//     and the last block's hash": the blocks are durable in every member's
//     BlockStore. Every RaftConfig.SnapshotEntries applied entries whose
//     blocks are stored, the member snapshots and compacts its log,
//     keeping KeepEntries behind. A member that receives a snapshot it is
//     behind fetches the missing blocks from the other members' Deliver
//     (catchup.go), checking each as a peer would, in order with the rest
//     of the pipeline.
//   - Cutting: only the leader receives transactions (followers forward),
//     so only its core cuts. Each batch becomes one log entry holding the
//     transactions and their tx ids, plus the proposer, its term and a
//     sequence number (raftentry.go); it holds no block number or previous
//     hash.
//   - Numbering: every committed entry with a batch becomes exactly one
//     block, numbered by its position among the applied batch entries (from
//     the snapshot's height, or the genesis block), and linked to the block
//     before it. So the header (number, previous hash, data hash) of every
//     block is a function of the committed log alone and identical on every
//     member, whoever cut it and whatever leader changes happened: an entry
//     can never be "proposed against an old height", because it names none.
//     seal checks the number the Raft loop assigned against its own count.
//     An entry that does not decode is skipped by every member alike.
//   - Leader change: proposals that were not committed are lost with the
//     old leader's term and never re-proposed (re-proposing could commit a
//     transaction twice); their clients, who learn of commits from the
//     peers, resubmit. Transactions still pending in a deposed leader are
//     cut and proposed later, and raft forwards the proposal to the new
//     leader. Peers' tx-id check remains the last guard against duplicates.
//   - Signing: each member signs the header hash of each block with its own
//     Signer in its seal stage (off the Raft loop); peers accept a block
//     signed by any orderer of the channel, so blocks differ between
//     members only in that signature.
//   - Quiescence: an idle group stops ticking and heartbeating
//     (quiesce.go) and wakes on any message, proposal or lost member
//     stream, so a channel with no traffic costs an orderer almost no CPU.
//   - Follower Submit: admitted (decoded, creator and signature checked)
//     on the follower, so the crypto spreads over every member, then
//     forwarded to the leader over the Cluster service, which queues it
//     without checking again. Forwarding, rather than answering 503 with
//     the leader's name, lets clients and peers use any orderer without
//     knowing the leader. With no leader known Submit returns
//     ErrUnavailable (503): retry.
//   - Transport (transport.go): the Cluster gRPC service on the orderer's
//     mutual-TLS listener, served only to the channel's orderers (node
//     hands their connections to a gRPC server of its own, whose receive
//     limit admits whole blocks, and refuses anyone else's Cluster call
//     on its headers, before its message is read). Each caller's TLS certificate
//     must be an orderer-role certificate of the channel (Registry.Member)
//     whose org and CN name one of RaftConfig.Peers; each Raft message's
//     From must be that member's id and To this one; otherwise the stream
//     is refused (PermissionDenied) and the refusal logged with the sender
//     and reason. Messages of a term older than this member's are dropped
//     and counted. Sends never block the Raft loop (a full queue drops the
//     message, which Raft tolerates).
//   - Leader transfer (admin.go): the Admin service's TransferLeader,
//     for an orderer org's admin (its mutual-TLS client certificate),
//     calls raft's TransferLeader at any member (a follower passes the
//     request to the leader, so the transport accepts a MsgTransferLeader
//     whose From is another member) and waits until that member sees the
//     new leader. Raft refuses proposals while a transfer is under way;
//     the leader holds the batches it cuts meanwhile (raftNode.held: in
//     no log, so never proposed twice) and proposes them once a leader is
//     known, so a transfer loses no admitted transaction.
//   - Bad input (refuse.go): every refusal is counted by kind
//     (RaftMetrics.RefusedBy: not_member, wrong_sender, malformed,
//     bad_block) and logged with the sender and the reason, but within a
//     per-kind budget (10 lines, then one a second; the next line says how
//     many were suppressed), so a flood cannot fill the disk. A block
//     fetched in catch-up must be the next one, link to the stored chain,
//     match its data hash and carry a valid signature of an orderer of
//     the channel; otherwise it is refused (bad_block), nothing is
//     stored, and catch-up moves to the next member.
//   - A deposed leader loses nothing it proposed: a batch it proposed as
//     leader whose term ended before it committed is kept (an orphan,
//     proposals.go) until this member applies an entry of a later term.
//     Terms never decrease along a Raft log, so an own entry not applied
//     before that one is in no committed log and never will be: it is
//     proposed again (RaftMetrics.Retried), to the new leader; one that
//     the new leader committed is simply applied. Nothing is ordered
//     twice by it. A member that loses its leadership but not its life (a
//     stalled fsync, a healed partition, a check-quorum step-down under
//     load) thus keeps its clients' transactions; a killed one takes
//     them with it, and the gateways resubmit (gateway/resubmit.go).
//   - A leader sends a Ready's messages before its log fsync, so that its
//     followers write the entries while it does (Raft thesis §10.2.1, as
//     etcd): raft counts the leader's own copy at Advance, after the
//     fsync; everyone else sends after it.
//   - Stream mode: "free" means this member has no proposal in flight (all
//     applied, or lost with their term, or older than two election
//     timeouts).
//   - Close stops admitting, cuts what is pending, and gives this member's
//     last proposals one election timeout to commit; what is not committed
//     by then is lost (resubmitted by clients).
//   - Metrics.Raft: leader, term, commit and applied index, leader changes,
//     proposal latency (proposal to apply, own proposals; a histogram),
//     forwarded submissions, refusals, snapshots, catch-up blocks, and the
//     log's fsync latency (raftlog.Stats, a histogram). Leader changes are
//     logged at info with the previous leader, the new one, the term and
//     the cause as far as this member can tell (leaderChangeCause): a
//     leader transfer (seen as MsgTimeoutNow, or vote requests carrying
//     raft's transfer context), check-quorum (a leader stepping down in
//     its own term), an election timeout (this member campaigning), or an
//     election started elsewhere.
//
// # Config updates: adding and removing orderers
//
// The channel's orderer set changes by config updates (api/config.go,
// config.go, confchange.go), one orderer added or removed per update:
//
//   - Format: an api.ConfigEnvelope: the exact bytes of an
//     api.ConfigUpdate {channel, sequence, the complete new orderer set
//     with Raft ids} and admins' signatures over those bytes, encoded as
//     api.ConfigMagic + JSON (never confused with a Transaction).
//   - Policy: valid signatures of admins of a majority of the channel's
//     orgs, peer and orderer orgs alike (config.go says why this and not
//     Fabric's /Channel/Orderer/Admins MAJORITY).
//   - Ordering: Submit admits it like a transaction (checked against this
//     member's config state; a follower forwards it); the loop cuts it
//     alone; the leader checks it again and proposes it as a raft
//     ConfChange (AddNode/RemoveNode) whose Context is the envelope. raft
//     takes one change at a time; another proposed meanwhile becomes an
//     empty entry, and its admins submit it again.
//   - Apply: every member checks the committed envelope against the same
//     config state (sequence, one change, ids never reused, policy; no
//     clock is read, so all decide alike; a refused one is applied to raft
//     as a no-op), then applies the ConfChange, moves to the next config
//     state (kept in snapshots, so restarts and snapshot-installing
//     members know it), updates the transport's member set, and hands seal
//     a config block: the envelope as the block's only transaction,
//     numbered like any block entry, so every member's chain stays
//     identical.
//   - Joining: the new orderer starts with RaftConfig.Join, the update's
//     orderer set: it does not bootstrap and waits for the leader, which
//     sends it the log or a snapshot (then catch-up fetches the blocks).
//   - Removal: a removed member stops ordering once it applies its
//     removal (Submit: ErrRemoved; Deliver still serves its blocks). If it
//     never learns the commit (the leader stops replicating to a member
//     once its removal applies), the others refuse its messages with the
//     update as evidence (removedError); it checks the update against its
//     own config state and stops. A leader asked to remove itself first
//     hands leadership to its most up-to-date follower and proposes the
//     update there (else, stopping at once, it could leave the others
//     unaware of the commit: a two-member cluster could never elect
//     again); StepDownOnRemoval stays as the backstop.
//   - Peers (node/orderers.go) adopt the orderer set of each config block
//     whose update verifies (VerifyConfigEnvelope) and is next in
//     sequence, for their block stream's failover and their gateway's
//     submissions.
//
// A one-member cluster works (no TLS needed), but the single-node orderer
// stays the choice for one orderer: Raft adds a log fsync per batch (see
// BenchmarkLatencyRaft1 and BenchmarkOrderingRaft1).
//
// # Starting a cluster member (for node/)
//
// For each orderer of a channel whose OrdererOrgs list more than one
// orderer, node/ should:
//
//  1. Give every orderer of ChannelConfig.Orderers() a Raft id that never
//     changes and is the same in every member's view: the position in
//     ChannelConfig.Orderers() plus one works while the list only grows at
//     the end. Build RaftConfig.Peers from them: {ID, Org, Name (the
//     certificate CN, which IssueTLS and Issue both set to the orderer's
//     name), Address}.
//  2. Build the TLS configs with LoadTLS(cfg, ch): the server config for
//     the gRPC server as today, the client config as RaftConfig.ClientTLS.
//  3. Open the BlockStore as today; choose RaftConfig.Dir as a sibling of
//     the block store directory (e.g. <data>/raft), never shared.
//  4. orderer.New(orderer.Config{..., Raft: &orderer.RaftConfig{ID, Peers,
//     Dir, ClientTLS}}) with the same Genesis and Batch on every member.
//  5. On the same grpc.Server: api.RegisterOrdererServer(s,
//     orderer.NewServer(o)), orderer.RegisterCluster(s, o) and
//     orderer.RegisterAdmin(s, o); then serve.
//     New may run before the server listens: members retry their peers.
//  6. Export o.Metrics() as today (Metrics.Raft becomes
//     strand_orderer_raft_*). On shutdown: stop the gRPC server, then
//     o.Close(), then close the BlockStore.
//
// # Caller's duties
//
// Open the Store before New and close it after Close; the orderer must be
// its only appender. Do not modify bytes after handing them to Submit.
// Admission checks the creator only: endorsements, policies, MVCC and
// duplicate tx ids are checked by the peers.
//
// # Files, by role
//
// The package's sub-packages are its pure parts: cut (where blocks end:
// Cutter, Pacer, Flow) and raftlog (the Raft log on disk). Here:
//
//	config.go, raftconfig.go   Config and RaftConfig: defaults, Validate
//	orderer.go                 the Orderer, its start and stop, the loop (cut.Flow's I/O side)
//	submit.go, server.go       admission, and the gRPC Orderer service
//	seal.go, persist.go        the pipeline's next two stages
//	deliver.go                 Deliver: blocks from the store to readers
//	checkpoint.go              which blocks are signed
//	channels.go                one gRPC server for many channels' Orderers
//	members.go                 membership updates (orgs, revocations) as they are stored
//	raft.go                    the Raft loop: the RawNode and the Ready contract
//	raftpropose.go, proposals.go   proposing cut batches; the own proposals in flight
//	raftapply.go               committed entries to numbered blocks; snapshots
//	raftleader.go, quiesce.go  leaders and transfers; a quiet cluster stops ticking
//	raftentry.go               the bytes of a log entry and of a snapshot
//	configupdate.go, confchange.go   orderer-set updates: checked, then applied as ConfChanges
//	transport.go, cluster.go, forward.go, clusterconns.go
//	                           the Cluster service: sending, serving, forwarding, shared connections
//	catchup.go, repair.go      fetching blocks a member lacks or holds damaged
//	admin.go, ready.go, metrics.go, refuse.go   operators: Admin service, readiness, metrics, refusals
package orderer
