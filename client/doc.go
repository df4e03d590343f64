// Package client is the Go SDK applications use to run transactions on a
// strand channel through one peer's gateway.
//
//	Contract.Evaluate  proposal ─▶ Gateway.Evaluate ─▶ result
//	Contract.Submit    proposal ─▶ Gateway.Endorse ─▶ check the payload
//	                   ─▶ sign ─▶ Gateway.Submit ─▶ Gateway.CommitStatus
//
// Invariants:
//   - Every proposal has a fresh 24-byte nonce from crypto/rand; its tx id
//     is api.TxID(nonce, creator), so a retry is a new transaction.
//   - The client signs only a payload it checked: its header is exactly
//     the one proposed, its contract the one called, and its response
//     payload answers this proposal (its hash) for this contract with
//     status 200. It signs the payload's exact bytes as received.
//   - Submit returns once the transaction is committed on the gateway's
//     own peer; another peer may not have committed it yet, so a query sent
//     to another gateway right after can still see the state before it.
//   - Submit returns a *Commit only for a transaction that committed; a
//     transaction that committed with a code other than VALID returns its
//     *Commit and a *CommitError.
//   - SubmitWithRetry re-runs a transaction (new proposal, new nonce) only
//     on MVCC_READ_CONFLICT or PHANTOM_READ_CONFLICT: the conflicting
//     transaction did not change state, so running it again is safe.
//
// Errors: *EndorseError (Evaluate or Endorse refused), *SubmitError (the
// ordering service refused, or the commit wait failed or timed out), and
// *CommitError (committed as invalid), each with a status or code and a
// message that says what to do.
//
// Caller's duties: pass transport credentials to Connect (mutual TLS in
// production), bound each call with its context, and Close the Gateway.
package client
