package client

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/strand-ledger/strand/api"
)

// ErrTooLarge: a proposal or transaction over api.MaxTxBytes, refused by
// the client before it is sent (the gateway and the orderers would refuse
// it on its length).
var ErrTooLarge = errors.New("client: request too large")

// EndorseError says the gateway refused to evaluate or endorse a
// proposal. Status follows HTTP: 400 malformed, 403 creator or signature
// refused, 404 unknown channel or contract, 409 tx id used, 429 the peer
// is overloaded (try again after RetryAfter), 5xx the contract or the
// network failed; a 503 with a RetryAfter is retryable (no endorser of the
// gateway's logical peer answered: a compute node died, the memory tier
// is unreachable).
type EndorseError struct {
	TxID       string
	Status     int32
	Message    string
	RetryAfter time.Duration // with 429 or a retryable 503: the gateway's hint
}

func (e *EndorseError) Error() string {
	return fmt.Sprintf("client: %s; tx %s not endorsed (status %d)", e.Message, e.TxID, e.Status)
}

// SubmitError says the transaction was not ordered (the ordering service
// or the gateway refused it), or that waiting for its commit failed;
// Status 429 means overloaded (submit it again after RetryAfter), 504 that
// the wait's deadline passed, and the transaction may still commit later.
type SubmitError struct {
	TxID       string
	Status     int32
	Message    string
	RetryAfter time.Duration // with 429: the gateway's hint
}

// overloaded returns the retry hint of a 429 from endorsement or
// submission, or of an endorsement's 503 that carries one.
func overloaded(err error) (time.Duration, bool) {
	var ee *EndorseError
	if errors.As(err, &ee) && (ee.Status == http.StatusTooManyRequests || ee.Status == http.StatusServiceUnavailable && ee.RetryAfter > 0) {
		return ee.RetryAfter, true
	}
	var se *SubmitError
	if errors.As(err, &se) && se.Status == http.StatusTooManyRequests {
		return se.RetryAfter, true
	}
	return 0, false
}

func (e *SubmitError) Error() string {
	return fmt.Sprintf("client: %s; tx %s (status %d)", e.Message, e.TxID, e.Status)
}

// CommitError says the transaction was committed in Block with a
// validation code other than VALID: it had no effect on state.
type CommitError struct {
	TxID  string
	Block uint64
	Code  api.TxValidationCode
}

func (e *CommitError) Error() string {
	return fmt.Sprintf("client: tx %s committed as invalid in block %d: %s: %s", e.TxID, e.Block, e.Code, advice(e.Code))
}

// Retryable reports whether running the transaction again (a new proposal)
// may succeed: its reads conflicted with a transaction ordered before it.
func (e *CommitError) Retryable() bool {
	return e.Code == api.TxValidationCode_MVCC_READ_CONFLICT || e.Code == api.TxValidationCode_PHANTOM_READ_CONFLICT
}

func advice(c api.TxValidationCode) string {
	switch c {
	case api.TxValidationCode_MVCC_READ_CONFLICT:
		return "another transaction changed a key this one read; run it again (SubmitWithRetry does)"
	case api.TxValidationCode_PHANTOM_READ_CONFLICT:
		return "another transaction changed a key range this one read; run it again (SubmitWithRetry does)"
	case api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE:
		return "its endorsements do not satisfy the contract's policy; check the gateway's peers and the policy"
	case api.TxValidationCode_DUPLICATE_TXID:
		return "its tx id was already used; build a new proposal"
	case api.TxValidationCode_BAD_CREATOR_SIGNATURE:
		return "the creator's signature does not verify; check the signing identity"
	case api.TxValidationCode_INVALID_CHAINCODE:
		return "the channel has no such contract; check the contract name"
	}
	return "the transaction is malformed or not allowed on this channel; it had no effect"
}
