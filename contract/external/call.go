package external

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
)

// invoke runs one call of contract name on the server: it starts the
// call, serves the server's state requests on stub in order, and returns
// the server's result, all within the runtime's Timeout.
func (c *conn) invoke(name string, stub contract.Stub) (result []byte, err error) {
	m := &c.r.m
	m.calls.Add(1)
	defer func() { m.count(err) }()
	timer := time.NewTimer(c.r.opts.Timeout)
	defer timer.Stop()
	s, err := c.session(timer.C)
	if err != nil {
		return nil, err
	}
	id, in, err := s.register()
	if err != nil {
		return nil, err
	}
	finished := false
	defer func() {
		s.unregister(id)
		if !finished { // the deadline, a refusal or the endorser's abandoning the call (its stub ends this goroutine)
			s.send(&api.ContractRequest{Call: id, Kind: &api.ContractRequest_Cancel{Cancel: &api.ContractCancel{Reason: "the peer stopped waiting"}}})
		}
	}()
	if err := s.send(&api.ContractRequest{Call: id, Kind: &api.ContractRequest_Invoke{Invoke: invokeOf(name, stub)}}); err != nil {
		return nil, err
	}
	cl := &caller{stub: stub, max: c.r.opts.MaxMessageBytes}
	defer func() { m.stateRequests.Add(uint64(cl.requests)) }()
	var buf []*api.ContractReply
	for {
		select {
		case <-in.signal:
		case <-timer.C:
			return nil, fmt.Errorf("%w: %s did not end the call of %s.%s within %v", ErrDeadline, c.pkg.Address, name, stub.Function(), c.r.opts.Timeout)
		}
		msgs, qerr := in.take(buf[:0])
		buf = msgs
		for i, msg := range msgs {
			msgs[i] = nil
			answer, done, res, err := cl.step(msg)
			if done { // the server is done with the call, whatever its outcome
				finished = true
				return res, err
			}
			if err != nil {
				return nil, err
			}
			if answer != nil {
				if err := s.send(&api.ContractRequest{Call: id, Kind: &api.ContractRequest_State{State: answer}}); err != nil {
					return nil, err
				}
			}
		}
		if qerr != nil {
			return nil, qerr
		}
	}
}

// invokeOf is the message that starts a call.
func invokeOf(name string, stub contract.Stub) *api.ContractInvoke {
	cr := stub.Creator()
	return &api.ContractInvoke{
		Contract: name, Function: stub.Function(), Args: stub.Args(), TxId: stub.TxID(), Channel: stub.Channel(),
		TimestampUnixNano: stub.Timestamp().UnixNano(),
		CreatorOrg:        cr.Org, CreatorRole: cr.Role, CreatorName: cr.Name, CreatorCert: cr.Cert,
	}
}

// caller serves one call's messages from the server on its stub. It is
// the peer's decoder of everything a server sends during a call: any
// message gives an answer, the end of the call or an error, never a
// panic (FuzzStep).
type caller struct {
	stub     contract.Stub
	max      int   // bytes an answer may have
	late     error // the first refusal of an unanswered request: it fails the call
	requests int   // state requests served
}

// step handles one message. It returns the answer to send (nil for none);
// or done (the server ended the call) with its result or error; or the
// error that ends the call.
func (cl *caller) step(msg *api.ContractReply) (answer *api.ContractStateAnswer, done bool, result []byte, err error) {
	switch k := msg.Kind.(type) {
	case *api.ContractReply_Result:
		if cl.late != nil {
			return nil, true, nil, cl.late
		}
		r := k.Result
		switch {
		case r == nil || r.Status == 0:
			return nil, true, r.GetPayload(), nil
		case r.Status >= 400 && r.Status <= 599:
			return nil, true, nil, &contract.Error{Status: int(r.Status), Message: r.Message}
		}
		return nil, true, nil, &contract.Error{Status: 500, Message: fmt.Sprintf("%s (the server's status %d is no error status; answered as 500)", r.Message, r.Status)}
	case *api.ContractReply_State:
		cl.requests++
		a, err := cl.state(k.State)
		return a, false, nil, err
	}
	return nil, false, nil, fmt.Errorf("%w: during a call it sent %s, want a state request or a result", ErrProtocol, kindOf(msg))
}

// state runs one state request on the stub.
func (cl *caller) state(req *api.ContractStateRequest) (*api.ContractStateAnswer, error) {
	st := cl.stub
	switch op := req.GetOp().(type) {
	case *api.ContractStateRequest_Get:
		v, err := st.GetState(op.Get.GetKey())
		if err != nil {
			return &api.ContractStateAnswer{Error: err.Error()}, nil
		}
		return cl.fit(&api.ContractStateAnswer{Values: []*api.StateValue{{Found: v != nil, Value: v}}}), nil
	case *api.ContractStateRequest_GetMulti:
		vs, err := st.GetMultipleStates(op.GetMulti.GetKeys()...)
		if err != nil {
			return &api.ContractStateAnswer{Error: err.Error()}, nil
		}
		a := &api.ContractStateAnswer{Values: make([]*api.StateValue, len(vs))}
		for i, v := range vs {
			a.Values[i] = &api.StateValue{Found: v != nil, Value: v}
		}
		return cl.fit(a), nil
	case *api.ContractStateRequest_Range:
		r := op.Range
		if r.GetPageSize() > 1<<30 {
			return &api.ContractStateAnswer{Error: fmt.Sprintf("external: range page size %d, want at most %d", r.GetPageSize(), 1<<30)}, nil
		}
		p, err := st.GetStateByRange(r.GetStart(), r.GetEnd(), int(r.GetPageSize()), r.GetBookmark())
		if err != nil {
			return &api.ContractStateAnswer{Error: err.Error()}, nil
		}
		a := &api.ContractStateAnswer{Bookmark: p.Bookmark, Kvs: make([]*api.StateKV, len(p.KVs))}
		for i, kv := range p.KVs {
			a.Kvs[i] = &api.StateKV{Key: kv.Key, Value: kv.Value}
		}
		return cl.fit(a), nil
	case *api.ContractStateRequest_Put:
		cl.unanswered(st.PutState(op.Put.GetKey(), op.Put.GetValue()))
		return nil, nil
	case *api.ContractStateRequest_Del:
		cl.unanswered(st.DelState(op.Del.GetKey()))
		return nil, nil
	case *api.ContractStateRequest_Event:
		cl.unanswered(st.SetEvent(op.Event.GetName(), op.Event.GetPayload()))
		return nil, nil
	}
	return nil, fmt.Errorf("%w: a state request with no operation", ErrProtocol)
}

// unanswered keeps the first refusal of a put, del or event.
func (cl *caller) unanswered(err error) {
	if err != nil && cl.late == nil {
		cl.late = err
	}
}

// fit replaces an answer over the message limit by an error the contract
// sees (a range page too large: ask for smaller pages).
func (cl *caller) fit(a *api.ContractStateAnswer) *api.ContractStateAnswer {
	if n := proto.Size(a); n > cl.max-1024 {
		return &api.ContractStateAnswer{Error: fmt.Sprintf("external: the answer is %d bytes, over the %d a message may carry; ask for fewer keys or smaller range pages", n, cl.max-1024)}
	}
	return a
}

// kindOf names a message's kind for errors.
func kindOf(m *api.ContractReply) string {
	switch k := m.Kind.(type) {
	case *api.ContractReply_Hello:
		return fmt.Sprintf("a hello (version %d) of call %d", k.Hello.GetVersion(), m.Call)
	case *api.ContractReply_State:
		return fmt.Sprintf("a state request of call %d", m.Call)
	case *api.ContractReply_Result:
		return fmt.Sprintf("a result of call %d", m.Call)
	}
	return fmt.Sprintf("a message of no kind (call %d)", m.Call)
}
