package endorser

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// Metrics is a snapshot of an endorser's counters since New. Every
// proposal is either endorsed or counted under exactly one refusal reason.
type Metrics struct {
	Proposals uint64 `metric:"counter"` // Proposals this endorser was asked to simulate and endorse.
	Endorsed  uint64 `metric:"counter"` // Proposals answered with an endorsement.

	// Proposals refused, by reason: bad_proposal (400: undecodable, no
	// header, creator or nonce), wrong_channel (404), bad_creator (403:
	// unknown org, untrusted certificate, wrong role), expired (403: the
	// creator's certificate is past NotAfter), bad_tx_id (400),
	// bad_signature (403), duplicate_tx_id (409), unknown_contract (404),
	// contract_failed (the contract returned an error), panicked (500),
	// timed_out (504: the deadline passed or the caller gave up),
	// quarantined (503: the contract has too many calls past their
	// deadline), query_writes (400: an evaluation that wrote), internal
	// (500: state, tx index, encoding or signing failed).
	BadProposal     uint64 `metric:"counter,family=refused,reason=bad_proposal"`
	WrongChannel    uint64 `metric:"counter,family=refused,reason=wrong_channel"`    // 404
	BadCreator      uint64 `metric:"counter,family=refused,reason=bad_creator"`      // 403: unknown org, untrusted certificate, wrong role
	Expired         uint64 `metric:"counter,family=refused,reason=expired"`          // 403: creator certificate past NotAfter
	BadTxID         uint64 `metric:"counter,family=refused,reason=bad_tx_id"`        // 400
	BadSignature    uint64 `metric:"counter,family=refused,reason=bad_signature"`    // 403
	DuplicateTxID   uint64 `metric:"counter,family=refused,reason=duplicate_tx_id"`  // 409
	UnknownContract uint64 `metric:"counter,family=refused,reason=unknown_contract"` // 404
	ContractFailed  uint64 `metric:"counter,family=refused,reason=contract_failed"`  // the contract returned an error
	Panicked        uint64 `metric:"counter,family=refused,reason=panicked"`         // 500
	TimedOut        uint64 `metric:"counter,family=refused,reason=timed_out"`        // 504: the timeout passed or the caller gave up
	Quarantined     uint64 `metric:"counter,family=refused,reason=quarantined"`      // 503: the contract had MaxOverdue calls running past their deadline
	QueryWrites     uint64 `metric:"counter,family=refused,reason=query_writes"`     // 400: an Evaluate whose simulation wrote
	Internal        uint64 `metric:"counter,family=refused,reason=internal"`         // 500: state, tx index, encoding or signing failed
	// 503: the state database did not answer or had lost state (a
	// memory node down or restarted); retryable.
	StateUnavailable uint64 `metric:"counter,family=refused,reason=state_unavailable"`
	// 503: the state did not reach the proposal's min height (its
	// gateway's peer's height) while it moved (CatchUpWait); retryable.
	Behind uint64 `metric:"counter,family=refused,reason=behind"`
	// Proposals that waited for the state to reach their min height
	// before simulating (answered or refused).
	CaughtUp uint64 `metric:"counter"`

	// Contract calls still running after their deadline (each holds a
	// goroutine; see run).
	Overdue uint64 `metric:"gauge"`
}

// Refused returns the number of proposals refused for any reason.
func (m Metrics) Refused() uint64 {
	return m.BadProposal + m.WrongChannel + m.BadCreator + m.Expired + m.BadTxID + m.BadSignature +
		m.DuplicateTxID + m.UnknownContract + m.ContractFailed + m.Panicked + m.TimedOut + m.Quarantined + m.QueryWrites + m.Internal + m.StateUnavailable + m.Behind
}

// String formats the snapshot on a few readable lines, leaving out zero
// refusal counters.
func (m Metrics) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "endorser: proposals %d, endorsed %d, refused %d", m.Proposals, m.Endorsed, m.Refused())
	if m.Overdue > 0 {
		fmt.Fprintf(&b, ", %d contract calls running past their deadline", m.Overdue)
	}
	b.WriteByte('\n')
	for _, r := range []struct {
		name string
		n    uint64
	}{
		{"bad proposal", m.BadProposal}, {"wrong channel", m.WrongChannel}, {"bad creator", m.BadCreator},
		{"expired certificate", m.Expired}, {"bad tx id", m.BadTxID}, {"bad signature", m.BadSignature},
		{"duplicate tx id", m.DuplicateTxID}, {"unknown contract", m.UnknownContract},
		{"contract error", m.ContractFailed}, {"contract panic", m.Panicked}, {"timed out", m.TimedOut},
		{"quarantined contract", m.Quarantined}, {"query that writes", m.QueryWrites}, {"internal error", m.Internal},
		{"state unavailable", m.StateUnavailable}, {"state behind", m.Behind},
	} {
		if r.n > 0 {
			fmt.Fprintf(&b, "  refused, %s: %d\n", r.name, r.n)
		}
	}
	return b.String()
}

// counters are the live counters behind Metrics.
type counters struct {
	proposals, endorsed, caughtUp atomic.Uint64
	reasons                       [numReasons]atomic.Uint64
}

// reasons, in the order of reasonSentinels.
const (
	numReasons     = 16
	internalReason = 13 // ErrInternal's index
)

var reasonSentinels = [numReasons]error{
	ErrBadProposal, ErrWrongChannel, ErrBadCreator, ErrExpired, ErrBadTxID, ErrBadSignature,
	ErrDuplicateTxID, ErrUnknownContract, ErrContractFailed, ErrPanicked, ErrTimedOut, ErrQuarantined, ErrQueryWrites, ErrInternal, ErrStateUnavailable, ErrBehind,
}

// refused counts err under its refusal's own sentinel (not one its cause
// may wrap); anything else counts as internal.
func (c *counters) refused(err error) {
	var r *refusal
	if errors.As(err, &r) {
		for i, s := range reasonSentinels {
			if r.sentinel == s {
				c.reasons[i].Add(1)
				return
			}
		}
	}
	c.reasons[internalReason].Add(1)
}

func (c *counters) snapshot() Metrics {
	r := func(i int) uint64 { return c.reasons[i].Load() }
	return Metrics{
		Proposals: c.proposals.Load(), Endorsed: c.endorsed.Load(), CaughtUp: c.caughtUp.Load(),
		BadProposal: r(0), WrongChannel: r(1), BadCreator: r(2), Expired: r(3), BadTxID: r(4), BadSignature: r(5),
		DuplicateTxID: r(6), UnknownContract: r(7), ContractFailed: r(8), Panicked: r(9), TimedOut: r(10), Quarantined: r(11),
		QueryWrites: r(12), Internal: r(internalReason), StateUnavailable: r(14), Behind: r(15),
	}
}
