package external

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Metrics counts a runtime's work since it started.
type Metrics struct {
	Calls         uint64 `metric:"counter"` // Calls sent to external contract servers.
	Connects      uint64 `metric:"counter"` // Connect streams opened to contract servers (one per server, again after a failure).
	StateRequests uint64 `metric:"counter"` // State operations contract servers asked for during calls.
	// Calls that failed, by kind: unreachable (no server, a TLS refusal,
	// no hello), deadline, conn_lost (the connection broke mid-call),
	// protocol (the server broke the protocol); a contract's own error
	// is none of them.
	Unreachable    uint64 `metric:"counter,family=failed,kind=unreachable"` // no server, a TLS refusal, or no hello
	Deadlines      uint64 `metric:"counter,family=failed,kind=deadline"`    // the server passed the call's deadline
	ConnLost       uint64 `metric:"counter,family=failed,kind=conn_lost"`   // the connection broke mid-call
	ProtocolErrors uint64 `metric:"counter,family=failed,kind=protocol"`    // the server broke the protocol
}

func (m Metrics) String() string {
	return fmt.Sprintf("external: %d calls, %d connects, %d state requests; failures: %d unreachable, %d deadlines, %d connections lost, %d protocol errors",
		m.Calls, m.Connects, m.StateRequests, m.Unreachable, m.Deadlines, m.ConnLost, m.ProtocolErrors)
}

type counters struct {
	calls, connects, stateRequests                   atomic.Uint64
	unreachable, deadlines, connLost, protocolErrors atomic.Uint64
}

// count records a call's failure by kind.
func (c *counters) count(err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrUnreachable):
		c.unreachable.Add(1)
	case errors.Is(err, ErrDeadline):
		c.deadlines.Add(1)
	case errors.Is(err, ErrConnLost):
		c.connLost.Add(1)
	case errors.Is(err, ErrProtocol):
		c.protocolErrors.Add(1)
	}
}

// Metrics returns a snapshot of the runtime's counters.
func (r *Runtime) Metrics() Metrics {
	c := &r.m
	return Metrics{
		Calls: c.calls.Load(), Connects: c.connects.Load(), StateRequests: c.stateRequests.Load(),
		Unreachable: c.unreachable.Load(), Deadlines: c.deadlines.Load(), ConnLost: c.connLost.Load(), ProtocolErrors: c.protocolErrors.Load(),
	}
}
