package api

import "google.golang.org/protobuf/encoding/protowire"

// DecodeResponsePayload decodes a simulation's response payload, read/write
// set included, as proto.Unmarshal would; its bytes fields alias raw. Every
// peer decodes one per transaction in stage 1, and the client and gateway
// one per endorsement, so it is on the hot path twice.
func DecodeResponsePayload(raw []byte) (*ResponsePayload, error) {
	p := new(ResponsePayload)
	var seenRWSet, seenEvent bool
	err := walk(raw, func(f field) (err error) {
		switch {
		case f.num == 4 && f.typ == protowire.VarintType:
			p.Status = int32(f.x)
		case f.typ != protowire.BytesType:
		case f.num == 1:
			p.ProposalHash = bytesField(f.v)
		case f.num == 2:
			p.Contract, err = stringField(f.v)
		case f.num == 3:
			if err = once(&seenRWSet); err == nil {
				p.Rwset, err = decodeRWSet(f.v)
			}
		case f.num == 5:
			p.Message, err = stringField(f.v)
		case f.num == 6:
			p.Result = bytesField(f.v)
		case f.num == 7:
			if err = once(&seenEvent); err == nil {
				p.Event, err = decodeEvent(f.v)
			}
		case f.num == 8:
			p.Channel, err = stringField(f.v)
		case f.num == 9:
			p.TxId, err = stringField(f.v)
		}
		return err
	})
	if err != nil {
		return slow(raw, new(ResponsePayload), err)
	}
	return p, nil
}

// The decoders below return errMerge up to DecodeResponsePayload, which
// then hands the whole payload to proto.Unmarshal.

func decodeRWSet(raw []byte) (*RWSet, error) {
	s := new(RWSet)
	err := walk(raw, func(f field) (err error) {
		if f.num == 1 && f.typ == protowire.BytesType {
			var ns *NsRWSet
			if ns, err = decodeNsRWSet(f.v); err == nil {
				s.Namespaces = append(s.Namespaces, ns)
			}
		}
		return err
	})
	return s, err
}

func decodeNsRWSet(raw []byte) (*NsRWSet, error) {
	ns := new(NsRWSet)
	err := walk(raw, func(f field) (err error) {
		if f.typ != protowire.BytesType {
			return nil
		}
		switch f.num {
		case 1:
			ns.Namespace, err = stringField(f.v)
		case 2:
			var r *KVRead
			if r, err = decodeKVRead(f.v); err == nil {
				ns.Reads = append(ns.Reads, r)
			}
		case 3:
			var rr *RangeRead
			if rr, err = decodeRangeRead(f.v); err == nil {
				ns.RangeReads = append(ns.RangeReads, rr)
			}
		case 4:
			var w *KVWrite
			if w, err = decodeKVWrite(f.v); err == nil {
				ns.Writes = append(ns.Writes, w)
			}
		}
		return err
	})
	return ns, err
}

func decodeKVRead(raw []byte) (*KVRead, error) {
	r := new(KVRead)
	var seenVersion bool
	err := walk(raw, func(f field) (err error) {
		if f.typ != protowire.BytesType {
			return nil
		}
		switch f.num {
		case 1:
			r.Key, err = stringField(f.v)
		case 2:
			if err = once(&seenVersion); err == nil {
				r.Version, err = decodeVersion(f.v)
			}
		}
		return err
	})
	return r, err
}

func decodeVersion(raw []byte) (*Version, error) {
	v := new(Version)
	err := walk(raw, func(f field) error {
		if f.typ == protowire.VarintType {
			switch f.num {
			case 1:
				v.Block = f.x
			case 2:
				v.Tx = uint32(f.x)
			}
		}
		return nil
	})
	return v, err
}

func decodeRangeRead(raw []byte) (*RangeRead, error) {
	rr := new(RangeRead)
	err := walk(raw, func(f field) (err error) {
		switch {
		case f.num == 3 && f.typ == protowire.VarintType:
			rr.Exhausted = f.x != 0
		case f.typ != protowire.BytesType:
		case f.num == 1:
			rr.StartKey, err = stringField(f.v)
		case f.num == 2:
			rr.EndKey, err = stringField(f.v)
		case f.num == 4:
			var r *KVRead
			if r, err = decodeKVRead(f.v); err == nil {
				rr.Reads = append(rr.Reads, r)
			}
		}
		return err
	})
	return rr, err
}

func decodeKVWrite(raw []byte) (*KVWrite, error) {
	w := new(KVWrite)
	err := walk(raw, func(f field) (err error) {
		switch {
		case f.num == 3 && f.typ == protowire.VarintType:
			w.IsDelete = f.x != 0
		case f.typ != protowire.BytesType:
		case f.num == 1:
			w.Key, err = stringField(f.v)
		case f.num == 2:
			w.Value = bytesField(f.v)
		}
		return err
	})
	return w, err
}

func decodeEvent(raw []byte) (*Event, error) {
	e := new(Event)
	err := walk(raw, func(f field) (err error) {
		if f.typ == protowire.BytesType {
			switch f.num {
			case 1:
				e.Name, err = stringField(f.v)
			case 2:
				e.Payload = bytesField(f.v)
			}
		}
		return err
	})
	return e, err
}
