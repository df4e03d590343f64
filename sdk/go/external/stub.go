package external

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
)

// call is one contract call and its stub.
type call struct {
	c       *peerConn
	id      uint64
	inv     *api.ContractInvoke
	answers chan *api.ContractStateAnswer // one waiting request at a time
	done    chan struct{}                 // closed when cancelled
	once    sync.Once
}

func newCall(c *peerConn, id uint64, inv *api.ContractInvoke) *call {
	cl := &call{c: c, id: id, inv: inv, answers: make(chan *api.ContractStateAnswer, 1), done: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls[id] != nil {
		return nil // a second invoke of a live call: ignored
	}
	c.calls[id] = cl
	return cl
}

func (cl *call) cancel() { cl.once.Do(func() { close(cl.done) }) }

func (cl *call) answer(a *api.ContractStateAnswer) {
	select {
	case cl.answers <- a:
	default: // an answer nobody asked for
	}
}

// run invokes the contract and sends its result.
func (cl *call) run() {
	res := &api.ContractResult{}
	defer func() {
		if r := recover(); r != nil {
			res = &api.ContractResult{Status: 500, Message: fmt.Sprintf("contract panicked: %v", r)}
		}
		cl.c.remove(cl.id)
		select {
		case <-cl.done: // cancelled: the peer no longer listens
		default:
			cl.c.send(&api.ContractReply{Call: cl.id, Kind: &api.ContractReply_Result{Result: res}})
		}
	}()
	payload, err := cl.c.s.c.Invoke(stub{cl})
	var ce *contract.Error
	switch {
	case err == nil:
		res.Payload = payload
	case errors.As(err, &ce):
		res.Status, res.Message = int32(ce.Status), ce.Message
		if ce.Status < 400 || ce.Status > 599 {
			res.Status = 500
		}
	default:
		res.Status, res.Message = 500, err.Error()
	}
}

// request sends a state request and, if ask, waits for its answer.
func (cl *call) request(req *api.ContractStateRequest, ask bool) (*api.ContractStateAnswer, error) {
	select {
	case <-cl.done:
		return nil, ErrCancelled
	default:
	}
	if err := cl.c.send(&api.ContractReply{Call: cl.id, Kind: &api.ContractReply_State{State: req}}); err != nil {
		return nil, fmt.Errorf("external: sending to the peer: %w", err)
	}
	if !ask {
		return nil, nil
	}
	select {
	case a := <-cl.answers:
		if a.Error != "" {
			return nil, errors.New(a.Error)
		}
		return a, nil
	case <-cl.done:
		return nil, ErrCancelled
	}
}

// stub is a call's contract.Stub.
type stub struct{ cl *call }

func (s stub) Function() string { return s.cl.inv.Function }
func (s stub) Args() [][]byte   { return s.cl.inv.Args }
func (s stub) TxID() string     { return s.cl.inv.TxId }
func (s stub) Channel() string  { return s.cl.inv.Channel }
func (s stub) Creator() contract.Creator {
	i := s.cl.inv
	return contract.Creator{Org: i.CreatorOrg, Role: i.CreatorRole, Name: i.CreatorName, Cert: i.CreatorCert}
}
func (s stub) Timestamp() time.Time { return time.Unix(0, s.cl.inv.TimestampUnixNano) }

func (s stub) GetState(key string) ([]byte, error) {
	a, err := s.cl.request(&api.ContractStateRequest{Op: &api.ContractStateRequest_Get{Get: &api.StateGet{Key: key}}}, true)
	if err != nil {
		return nil, err
	}
	if len(a.Values) != 1 {
		return nil, fmt.Errorf("external: the peer answered a get with %d values", len(a.Values))
	}
	return value(a.Values[0]), nil
}

func value(v *api.StateValue) []byte {
	if !v.GetFound() {
		return nil
	}
	if v.Value == nil {
		return []byte{}
	}
	return v.Value
}

func (s stub) GetMultipleStates(keys ...string) ([][]byte, error) {
	a, err := s.cl.request(&api.ContractStateRequest{Op: &api.ContractStateRequest_GetMulti{GetMulti: &api.StateGetMulti{Keys: keys}}}, true)
	if err != nil {
		return nil, err
	}
	if len(a.Values) != len(keys) {
		return nil, fmt.Errorf("external: the peer answered a get of %d keys with %d values", len(keys), len(a.Values))
	}
	out := make([][]byte, len(keys))
	for i, v := range a.Values {
		out[i] = value(v)
	}
	return out, nil
}

func (s stub) PutState(key string, v []byte) error {
	if err := contract.CheckKey("key", key); err != nil {
		return err
	}
	if err := contract.CheckValue("value of "+key, v); err != nil {
		return err
	}
	_, err := s.cl.request(&api.ContractStateRequest{Op: &api.ContractStateRequest_Put{Put: &api.StatePut{Key: key, Value: v}}}, false)
	return err
}

func (s stub) DelState(key string) error {
	if err := contract.CheckKey("key", key); err != nil {
		return err
	}
	_, err := s.cl.request(&api.ContractStateRequest{Op: &api.ContractStateRequest_Del{Del: &api.StateDel{Key: key}}}, false)
	return err
}

func (s stub) GetStateByRange(start, end string, pageSize int, bookmark string) (contract.Page, error) {
	if pageSize < 0 || pageSize > 1<<30 {
		return contract.Page{}, fmt.Errorf("external: page size %d, want 0 (no limit) to %d", pageSize, 1<<30)
	}
	a, err := s.cl.request(&api.ContractStateRequest{Op: &api.ContractStateRequest_Range{Range: &api.StateRange{
		Start: start, End: end, PageSize: uint32(pageSize), Bookmark: bookmark}}}, true)
	if err != nil {
		return contract.Page{}, err
	}
	p := contract.Page{Bookmark: a.Bookmark, KVs: make([]contract.KV, len(a.Kvs))}
	for i, kv := range a.Kvs {
		p.KVs[i] = contract.KV{Key: kv.Key, Value: kv.Value}
	}
	return p, nil
}

func (s stub) SetEvent(name string, payload []byte) error {
	_, err := s.cl.request(&api.ContractStateRequest{Op: &api.ContractStateRequest_Event{Event: &api.StateEvent{Name: name, Payload: payload}}}, false)
	return err
}
