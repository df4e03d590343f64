package orderer

import (
	"context"
	"errors"
)

// Sentinel errors, checked with errors.Is. Every error Submit returns
// wraps exactly one of them (or the context's error) and names the
// transaction, the value and what was expected; StatusOf maps it to the
// status a client sees.
var (
	// ErrBadConfig: New was given an invalid Config.
	ErrBadConfig = errors.New("orderer: invalid config")
	// ErrMalformed: the bytes are not a structurally valid transaction
	// (api.DecodeTx refused them). Status 400.
	ErrMalformed = errors.New("orderer: malformed transaction")
	// ErrWrongChannel: the transaction names another channel. Status 404.
	ErrWrongChannel = errors.New("orderer: wrong channel")
	// ErrForbidden: the creator is not a valid client or admin of a
	// channel org, its certificate expired, or its signature does not
	// verify. Status 403.
	ErrForbidden = errors.New("orderer: creator refused")
	// ErrOverloaded: the queue of admitted transactions is full; retry
	// later. Status 429.
	ErrOverloaded = errors.New("orderer: overloaded")
	// ErrClosed: the orderer is closed or closing. Status 503.
	ErrClosed = errors.New("orderer: closed")
	// ErrUnavailable: a Raft member cannot order now: no leader is known
	// (an election is under way), or the leader could not be reached.
	// Retry, here or at another orderer. Status 503.
	ErrUnavailable = errors.New("orderer: unavailable")
	// ErrFailed: the orderer stopped after its block store failed; it
	// orders nothing more until restarted. Status 503.
	ErrFailed = errors.New("orderer: failed")
)

// Statuses of SubmitResponse, HTTP style.
const (
	StatusOK          = 200
	StatusBadRequest  = 400
	StatusForbidden   = 403
	StatusNotFound    = 404
	StatusTooMany     = 429
	StatusUnavailable = 503
	StatusTimeout     = 504
)

// StatusOf returns the status for an error of Submit: 200 for nil, 400,
// 403, 404, 429, 503 for the sentinels, 504 for a cancelled or expired
// context, and 503 for anything else.
func StatusOf(err error) int32 {
	switch {
	case err == nil:
		return StatusOK
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrNoChannel):
		return StatusBadRequest
	case errors.Is(err, ErrForbidden):
		return StatusForbidden
	case errors.Is(err, ErrWrongChannel), errors.Is(err, ErrUnknownChannel):
		return StatusNotFound
	case errors.Is(err, ErrOverloaded):
		return StatusTooMany
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return StatusTimeout
	}
	return StatusUnavailable
}
