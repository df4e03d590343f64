package memnode

import (
	"errors"
	"fmt"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// ErrBadRequest marks a request the memory node refuses as malformed;
// test with errors.Is. The server answers it with InvalidArgument.
var ErrBadRequest = errors.New("memnode: bad request")

// Limits of one request, checked before anything is read or written.
const (
	// MaxKeys bounds the keys of one GetMany.
	MaxKeys = 1 << 20
	// MaxWrites bounds the writes of one Apply.
	MaxWrites = 1 << 22
)

// decodeKeys converts the keys of a GetMany. Namespaces are checked by
// the read itself (statedb.ErrBadNamespace).
func decodeKeys(ks []*api.MemKey) ([]statedb.Key, error) {
	if len(ks) > MaxKeys {
		return nil, fmt.Errorf("%w: GetMany of %d keys, at most %d", ErrBadRequest, len(ks), MaxKeys)
	}
	out := make([]statedb.Key, len(ks))
	for i, k := range ks {
		out[i] = statedb.Key{Namespace: string(k.GetNamespace()), Key: string(k.GetKey())}
	}
	return out, nil
}

func encodeKeys(keys []statedb.Key) []*api.MemKey {
	out := make([]*api.MemKey, len(keys))
	for i, k := range keys {
		out[i] = &api.MemKey{Namespace: []byte(k.Namespace), Key: []byte(k.Key)}
	}
	return out
}

// decodeApply converts an Apply request into the batch it carries,
// checking the heights, the size and every namespace.
func decodeApply(req *api.MemApplyRequest) (*statedb.Batch, error) {
	if req.GetHeight() <= req.GetFrom() {
		return nil, fmt.Errorf("%w: Apply from height %d to height %d: the height must be above from", ErrBadRequest, req.GetFrom(), req.GetHeight())
	}
	ws := req.GetWrites()
	if len(ws) > MaxWrites {
		return nil, fmt.Errorf("%w: Apply of %d writes, at most %d", ErrBadRequest, len(ws), MaxWrites)
	}
	b := &statedb.Batch{Writes: make([]statedb.Write, len(ws))}
	for i, w := range ws {
		b.Writes[i] = statedb.Write{Namespace: string(w.GetNamespace()), Key: string(w.GetKey()), Value: w.GetValue(),
			Delete: w.GetDelete(), Version: statedb.Version{Block: w.GetBlock(), Tx: w.GetTx()}}
		if w.GetDelete() && len(w.GetValue()) > 0 {
			return nil, fmt.Errorf("%w: Apply write %d (key %q) is a delete with a value", ErrBadRequest, i, w.GetKey())
		}
	}
	if err := b.CheckNamespaces(); err != nil {
		return nil, fmt.Errorf("%w: Apply: %w", ErrBadRequest, err)
	}
	return b, nil
}

func encodeApply(b *statedb.Batch, from, height uint64, sync bool) *api.MemApplyRequest {
	req := &api.MemApplyRequest{From: from, Height: height, Sync: sync}
	if b == nil {
		return req
	}
	req.Writes = make([]*api.MemWrite, len(b.Writes))
	for i, w := range b.Writes {
		mw := &api.MemWrite{Namespace: []byte(w.Namespace), Key: []byte(w.Key), Delete: w.Delete, Block: w.Version.Block, Tx: w.Version.Tx}
		if !w.Delete {
			mw.Value = w.Value
		}
		req.Writes[i] = mw
	}
	return req
}

func encodeValue(r statedb.Result, versionsOnly bool) *api.MemValue {
	v := &api.MemValue{Found: r.Found, Block: r.Value.Version.Block, Tx: r.Value.Version.Tx}
	if r.Found && !versionsOnly {
		v.Data = r.Value.Data
		if v.Data == nil {
			v.Data = []byte{} // a found empty value stays found and empty
		}
	}
	return v
}

func decodeValue(v *api.MemValue) statedb.Result {
	if !v.GetFound() {
		return statedb.Result{}
	}
	data := v.GetData()
	if data == nil {
		data = []byte{}
	}
	return statedb.Result{Found: true, Value: statedb.Value{Data: data, Version: statedb.Version{Block: v.GetBlock(), Tx: v.GetTx()}}}
}
