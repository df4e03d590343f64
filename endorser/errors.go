package endorser

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// Sentinel errors, checked with errors.Is. Every error from Simulate and
// every refusal message of ProcessProposal wraps exactly one of the refusal
// sentinels; StatusOf maps it to the status the client sees.
var (
	ErrBadConfig       = errors.New("endorser: invalid config")
	ErrBadProposal     = errors.New("endorser: malformed proposal")
	ErrWrongChannel    = errors.New("endorser: wrong channel")
	ErrBadCreator      = errors.New("endorser: creator refused")
	ErrExpired         = errors.New("endorser: creator certificate expired")
	ErrBadSignature    = errors.New("endorser: bad proposal signature")
	ErrBadTxID         = errors.New("endorser: tx id does not match nonce and creator")
	ErrDuplicateTxID   = errors.New("endorser: tx id already used")
	ErrUnknownContract = errors.New("endorser: unknown contract")
	ErrContractFailed  = errors.New("endorser: contract returned an error")
	ErrPanicked        = errors.New("endorser: contract panicked")
	ErrTimedOut        = errors.New("endorser: contract timed out")
	ErrQuarantined     = errors.New("endorser: contract has too many calls running past their deadline")
	ErrQueryWrites     = errors.New("endorser: a query that writes")
	ErrInternal        = errors.New("endorser: internal error")
	// ErrStateUnavailable: the state database did not answer or lost
	// state (statedb.ErrUnavailable, statedb.ErrStateLost: a memory node
	// down or restarted). Retryable: 503.
	ErrStateUnavailable = errors.New("endorser: state unavailable (retryable)")
	// ErrBehind: the endorser's state did not reach the proposal's
	// MinHeight within CatchUpWait. Retryable: 503.
	ErrBehind = errors.New("endorser: state behind the proposal's min height (retryable)")

	// Errors the stub returns to a contract.
	ErrSimulationOver = errors.New("endorser: simulation is over")
	ErrBadKey         = errors.New("endorser: invalid key")
	ErrValueTooLarge  = errors.New("endorser: value too large")
	ErrBadRange       = errors.New("endorser: invalid range query")
	ErrBadEvent       = errors.New("endorser: invalid event")
)

// refusal is an error that carries the status a client sees. Its message
// is the full text; it unwraps to its sentinel and, if any, its cause.
type refusal struct {
	sentinel error
	status   int32
	msg      string
	cause    error
}

func (r *refusal) Error() string { return r.msg }

func (r *refusal) Unwrap() []error {
	if r.cause == nil {
		return []error{r.sentinel}
	}
	return []error{r.sentinel, r.cause}
}

// refuse builds a refusal with the sentinel's status. msg should name the
// thing, the value and what was expected; it is prefixed with "endorser: ".
func refuse(sentinel error, cause error, msg string) *refusal {
	return &refusal{sentinel: sentinel, status: statusFor(sentinel), msg: "endorser: " + msg, cause: cause}
}

func statusFor(sentinel error) int32 {
	switch sentinel {
	case ErrBadProposal, ErrBadTxID, ErrQueryWrites:
		return http.StatusBadRequest
	case ErrBadCreator, ErrExpired, ErrBadSignature:
		return http.StatusForbidden
	case ErrWrongChannel, ErrUnknownContract:
		return http.StatusNotFound
	case ErrDuplicateTxID:
		return http.StatusConflict
	case ErrTimedOut:
		return http.StatusGatewayTimeout
	case ErrQuarantined, ErrStateUnavailable, ErrBehind:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// stateRefusal is the refusal of a call of what whose state read failed
// with err: 503 when the state database may answer a retry, else 500.
func stateRefusal(what string, err error) *refusal {
	if errors.Is(err, statedb.ErrUnavailable) || errors.Is(err, statedb.ErrStateLost) {
		return refuse(ErrStateUnavailable, err, fmt.Sprintf("%s: state unavailable: %v; try again", what, err))
	}
	return refuse(ErrInternal, err, fmt.Sprintf("%s: reading state: %v", what, err))
}

// contractStatus is the status of a contract's *contract.Error: its own if
// it is a 4xx or 5xx, else 500 (a contract cannot make a failure look like
// success or a redirect).
func contractStatus(e *contract.Error) int32 {
	if e.Status >= 400 && e.Status <= 599 {
		return int32(e.Status)
	}
	return http.StatusInternalServerError
}

// StatusOf returns the status a client should see for an error from
// Simulate: 400 malformed proposal or tx id, 403 creator or signature
// refused, 404 wrong channel or unknown contract, 409 tx id used, 504 timed
// out, a contract's own 4xx/5xx, and 500 for everything else. It returns 200
// for a nil error.
func StatusOf(err error) int32 {
	if err == nil {
		return http.StatusOK
	}
	var r *refusal
	if errors.As(err, &r) {
		return r.status
	}
	return http.StatusInternalServerError
}
