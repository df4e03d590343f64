// Package gateway is the client-facing service on a peer (steps 1, 3 and 6
// of a transaction's flow, see DESIGN.md): a client talks to one peer and
// the gateway does the rest.
//
//	Evaluate      ─▶ the local endorser; nothing is ordered
//	Endorse       ─▶ the local org's pool (the local endorser, or a compute
//	                 node of this logical peer) and, in parallel, one peer
//	                 of each other org the contract's policy needs
//	                 ─▶ TxPayload bytes
//	Submit        ─▶ the ordering service (fail over in preference order)
//	CommitStatus  ─▶ the block store's tx index, else the committer's events
//	BlockEvents   ─▶ stored blocks, then live commit events
//
// Invariants:
//   - Endorse asks orgs in a fixed order: the local org first, then the
//     policy's orgs in the order Orgs() names them, adding orgs until the
//     policy holds over one peer of each (the plan is computed once, in
//     New). Every endorser must return byte-identical ResponsePayloads;
//     the returned TxPayload carries exactly those bytes and the proposal's
//     header and contract, so the client can check and sign it.
//   - Read-your-writes: Endorse asks the local org's pool for state of at
//     least Ledger.Height() blocks as the proposal came
//     (api.SignedProposal.MinHeight), so a transaction this gateway
//     reported committed is read by the client's next proposal at a
//     compute node too, not only at this peer. An endorser behind waits
//     for that height while its state moves (endorser.CatchUpWait), else
//     refuses with 503. Without it a compute node and another org's peer
//     behind by the same block agree on what they read, and the
//     transaction fails its MVCC check at commit. Another org's peer is
//     sent only the height the client asked for: behind by a block the
//     transaction reads, it disagrees with the fresh local answer (next
//     point); behind by one it does not read, nothing waits for it.
//   - Peers at different heights simulate on different state: they sign
//     different payloads, or a peer behind refuses (a key it has not seen
//     yet). When the endorsers disagree, or a remote peer refuses what the
//     local peer endorsed, Endorse asks again. While the heights in the
//     answers (ProposalResponse.Height) differ, a remote org whose peer is
//     behind is asked again at once through its next peer (each peer of
//     the org once per call); otherwise Endorse waits for the peer behind
//     (the local one until Ledger.Height() reaches the others) for up to
//     Config.Timeout from the call's start, without counting attempts; otherwise it asks Config.EndorseAttempts times in all,
//     while the call's context allows, and then answers 500 "endorsers
//     disagree" or the remote refusal. A local refusal is answered at
//     once.
//   - A remote peer that fails (transport error) is replaced by the org's
//     next peer; a peer that answers with a refusal is not: the refusal is
//     the answer, reported with the peer's name.
//   - The local org's endorsement goes to one member of the Pool: the
//     primary's own endorser and the compute nodes that joined it, which
//     read the same memory tier. The member with the fewest proposals in
//     flight from this gateway is asked, ties round-robin; a transport
//     failure, or a compute node's answer made with another definition
//     of the contract than the primary's (its sequence), asks the next
//     member (pool.go). Every 503 Endorse answers
//     carries a retry hint (retry_after_ms): no endorser could answer, or
//     the memory tier did not.
//   - CommitStatus subscribes to commit events before it looks the tx id
//     up, so a transaction committed between the two is never missed. A
//     block is appended to the block store before its event is published.
//   - A transaction an orderer admitted is watched until it commits on this
//     peer, and sent again when it is overdue: the ordering service lost it
//     (a Raft leader that died or lost its leadership with it queued or
//     proposed). Overdue is a deadline from the admit-to-commit latency
//     this gateway observes, so a client sees a leader loss as an election,
//     not its own timeout. Sending a tx id twice is safe: a second copy is
//     DUPLICATE_TXID, which claims nothing, so every answer is the first
//     copy's (resubmit.go states the policy and its bounds).
//   - BlockEvents sends every block from the requested start exactly once
//     and in order. Blocks are read from the block store, and only below
//     Ledger.Height() (committed: stored and applied to state); live events
//     only say how far to read. A subscription cut off for lagging is
//     replaced and the stream resumes from the block store.
//
// Refusals of Evaluate, Endorse and Submit are answers (a status and a
// message in the response), not gRPC errors; gRPC errors mean the call
// itself failed. CommitStatus answers codes.DeadlineExceeded (504) when
// the request's deadline passes before the transaction commits here.
//
// Caller's duties: give the gateway its channel's side of the peer
// through two small interfaces it owns, Endorser (endorse, evaluate,
// a contract's sequence: *endorser.Endorser) and Ledger (tx index, commit
// events, height: PeerLedger over the block store and committer), so a
// peer with several channels hands each gateway its own channel and
// nothing else; clients for the other orgs' peers and for
// the orderers (NamedEndorser and NamedOrderer give them the names its
// messages use), and authenticate clients at the transport (mutual TLS):
// the gateway trusts the signatures inside the messages, not the caller.
// Wrap those clients in BatchSubmits and BatchProposals: the submits and
// the remote endorsements that arrive while one is in flight then travel
// as one call (SubmitBatch, ProcessProposals), with no timer, so a lone
// call goes at once (in a `net up` network at saturation, remote batching
// took 1.3% off the CPU per transaction). Serve NewEndorserServer beside
// the gateway so other orgs' gateways can ask this peer. Package testnet runs a whole network in one test.
package gateway
