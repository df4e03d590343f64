package api

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Zero-copy decoders for the messages on the validator's hot path (block,
// transaction envelope, payload, header, endorsement, identity). They give
// exactly what proto.Unmarshal gives (FuzzDecodersMatchProto checks it),
// except that bytes fields alias the input instead of copying it, so the
// input must not change while the result is in use. A non-repeated message
// field that occurs twice (protobuf merges the occurrences; no correct
// encoder writes that) sends the message to proto.Unmarshal instead.

// errMerge signals a repeated non-repeated message field.
var errMerge = errors.New("api: merge needed")

// field is one decoded field: v holds a length-delimited field's bytes,
// x a varint field's value.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   []byte
	x   uint64
}

// walk calls fn for each field of a message, validating the wire format
// as proto.Unmarshal does.
func walk(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("api: decode: %w", protowire.ParseError(n))
		}
		if num > protowire.MaxValidNumber {
			return fmt.Errorf("api: decode: field number %d exceeds %d", num, protowire.MaxValidNumber)
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.BytesType:
			f.v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			f.x, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("api: decode: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// bytesField returns the value of a bytes field: proto.Unmarshal gives a
// non-nil empty slice for a present empty field.
func bytesField(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

func stringField(v []byte) (string, error) {
	if !utf8.Valid(v) {
		return "", fmt.Errorf("api: decode: string field contains invalid UTF-8")
	}
	return string(v), nil
}

// once records the first occurrence of a non-repeated message field.
func once(seen *bool) error {
	if *seen {
		return errMerge
	}
	*seen = true
	return nil
}

func slow[M proto.Message](raw []byte, m M, err error) (M, error) {
	if !errors.Is(err, errMerge) {
		var zero M
		return zero, err
	}
	if err := proto.Unmarshal(raw, m); err != nil {
		var zero M
		return zero, err
	}
	return m, nil
}

// DecodeBlock decodes a block; its transactions alias raw.
func DecodeBlock(raw []byte) (*Block, error) {
	b := new(Block)
	var seenHeader, seenMeta bool
	err := walk(raw, func(f field) (err error) {
		if f.typ != protowire.BytesType {
			return nil
		}
		switch f.num {
		case 1:
			if err = once(&seenHeader); err == nil {
				b.Header = new(BlockHeader)
				err = proto.Unmarshal(f.v, b.Header)
			}
		case 2:
			b.Transactions = append(b.Transactions, bytesField(f.v))
		case 3:
			if err = once(&seenMeta); err == nil {
				b.Metadata = new(BlockMetadata)
				err = proto.Unmarshal(f.v, b.Metadata)
			}
		}
		return err
	})
	if err != nil {
		return slow(raw, new(Block), err)
	}
	return b, nil
}

func decodeTransaction(raw []byte) (*Transaction, error) {
	t := new(Transaction)
	err := walk(raw, func(f field) error {
		if f.typ == protowire.BytesType {
			switch f.num {
			case 1:
				t.Payload = bytesField(f.v)
			case 2:
				t.Signature = bytesField(f.v)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// DecodeTxPayload decodes a TxPayload as proto.Unmarshal would, in a
// fraction of its time; its byte fields alias raw.
func DecodeTxPayload(raw []byte) (*TxPayload, error) {
	p := new(TxPayload)
	var seenHeader bool
	err := walk(raw, func(f field) (err error) {
		if f.typ != protowire.BytesType {
			return nil
		}
		switch f.num {
		case 1:
			if err = once(&seenHeader); err == nil {
				p.Header, err = decodeTxHeader(f.v)
			}
		case 2:
			p.Contract, err = stringField(f.v)
		case 3:
			p.ResponsePayload = bytesField(f.v)
		case 4:
			var e *Endorsement
			if e, err = decodeEndorsement(f.v); err == nil {
				p.Endorsements = append(p.Endorsements, e)
			}
		}
		return err
	})
	if err != nil {
		return slow(raw, new(TxPayload), err)
	}
	return p, nil
}

func decodeTxHeader(raw []byte) (*TxHeader, error) {
	h := new(TxHeader)
	var seenCreator bool
	err := walk(raw, func(f field) (err error) {
		switch {
		case f.num == 5 && f.typ == protowire.VarintType:
			h.TimestampUnixNano = int64(f.x)
		case f.typ != protowire.BytesType:
		case f.num == 1:
			h.Channel, err = stringField(f.v)
		case f.num == 2:
			h.TxId, err = stringField(f.v)
		case f.num == 3:
			if err = once(&seenCreator); err == nil {
				h.Creator, err = decodeIdentity(f.v)
			}
		case f.num == 4:
			h.Nonce = bytesField(f.v)
		}
		return err
	})
	if err != nil {
		return slow(raw, new(TxHeader), err)
	}
	return h, nil
}

func decodeEndorsement(raw []byte) (*Endorsement, error) {
	e := new(Endorsement)
	var seenEndorser bool
	err := walk(raw, func(f field) (err error) {
		if f.typ != protowire.BytesType {
			return nil
		}
		switch f.num {
		case 1:
			if err = once(&seenEndorser); err == nil {
				e.Endorser, err = decodeIdentity(f.v)
			}
		case 2:
			e.Signature = bytesField(f.v)
		}
		return err
	})
	if err != nil {
		return slow(raw, new(Endorsement), err)
	}
	return e, nil
}

func decodeIdentity(raw []byte) (*Identity, error) {
	id := new(Identity)
	err := walk(raw, func(f field) (err error) {
		if f.typ == protowire.BytesType {
			switch f.num {
			case 1:
				id.Org, err = stringField(f.v)
			case 2:
				id.Cert = bytesField(f.v)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return id, nil
}

// WithValidationCodes returns a copy of an encoded block whose metadata
// carries codes as its validation codes, without re-encoding the block: it
// appends a metadata field, which protobuf merges into the existing one
// (the orderer's signature stays; a bytes field's last occurrence wins).
func WithValidationCodes(raw, codes []byte) []byte {
	inner := protowire.SizeTag(2) + protowire.SizeBytes(len(codes))
	out := make([]byte, 0, len(raw)+protowire.SizeTag(3)+protowire.SizeBytes(inner))
	out = append(out, raw...)
	out = protowire.AppendTag(out, 3, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(inner))
	out = protowire.AppendTag(out, 2, protowire.BytesType)
	return protowire.AppendBytes(out, codes)
}
