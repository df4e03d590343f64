package api

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// discardUnknown clears unknown fields recursively: the zero-copy decoders
// skip unknown fields rather than keep them.
func discardUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				discardUnknown(v.List().Get(i).Message())
			}
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			discardUnknown(v.Message())
		}
		return true
	})
}

// FuzzDecodersMatchProto: each zero-copy decoder accepts exactly what
// proto.Unmarshal accepts and yields an equal message.
func FuzzDecodersMatchProto(f *testing.F) {
	id := &Identity{Org: "Org1", Cert: []byte("cert")}
	hdr := &TxHeader{Channel: "ch", TxId: "id", Creator: id, Nonce: []byte("n"), TimestampUnixNano: -5}
	payload := &TxPayload{Header: hdr, Contract: "kv", ResponsePayload: []byte("resp"),
		Endorsements: []*Endorsement{{Endorser: id, Signature: []byte("s")}, {}}}
	block := &Block{Header: &BlockHeader{Number: 7, PreviousHash: []byte("p")}, Transactions: [][]byte{[]byte("a"), {}},
		Metadata: &BlockMetadata{ValidationCodes: []byte{0, 11}}}
	resp := &ResponsePayload{ProposalHash: []byte("h"), Contract: "kv", Status: 200, Message: "m", Result: []byte("r"), Channel: "ch", TxId: "id",
		Event: &Event{Name: "e", Payload: []byte{}},
		Rwset: &RWSet{Namespaces: []*NsRWSet{{Namespace: "kv",
			Reads:      []*KVRead{{Key: "a", Version: &Version{Block: 1 << 40, Tx: 3}}, {Key: "b"}},
			RangeReads: []*RangeRead{{StartKey: "a", EndKey: "z", Exhausted: true, Reads: []*KVRead{{Key: "c", Version: &Version{}}}}},
			Writes:     []*KVWrite{{Key: "a", Value: []byte("v")}, {Key: "b", IsDelete: true}}}, {}}}}
	for _, m := range []proto.Message{id, hdr, payload, block, &Transaction{Payload: []byte("p"), Signature: []byte("s")}, resp,
		&ResponsePayload{Status: -1}} {
		raw, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
		f.Add(append(raw, raw...)) // repeated fields: merges and last-wins
	}
	f.Add([]byte{0x0a, 0x02, 0xff, 0xfe}) // invalid UTF-8 in a string field
	f.Add([]byte{0x08, 0x01})             // field 1 with the wrong wire type
	f.Fuzz(func(t *testing.T, raw []byte) {
		check(t, "Identity", raw, new(Identity), func() (proto.Message, error) { return decodeIdentity(raw) })
		check(t, "Endorsement", raw, new(Endorsement), func() (proto.Message, error) { return decodeEndorsement(raw) })
		check(t, "TxHeader", raw, new(TxHeader), func() (proto.Message, error) { return decodeTxHeader(raw) })
		check(t, "TxPayload", raw, new(TxPayload), func() (proto.Message, error) { return DecodeTxPayload(raw) })
		check(t, "Transaction", raw, new(Transaction), func() (proto.Message, error) { return decodeTransaction(raw) })
		check(t, "Block", raw, new(Block), func() (proto.Message, error) { return DecodeBlock(raw) })
		check(t, "ResponsePayload", raw, new(ResponsePayload), func() (proto.Message, error) { return DecodeResponsePayload(raw) })
	})
}

func check(t *testing.T, name string, raw []byte, want proto.Message, decode func() (proto.Message, error)) {
	t.Helper()
	wantErr := proto.Unmarshal(raw, want)
	got, err := decode()
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s of %x: decoder error %v, proto.Unmarshal error %v", name, raw, err, wantErr)
	}
	if err != nil {
		return
	}
	discardUnknown(want.ProtoReflect())
	discardUnknown(got.ProtoReflect())
	if !proto.Equal(got, want) {
		t.Fatalf("%s of %x:\n decoder %v\n   proto %v", name, raw, got, want)
	}
}

func TestWithValidationCodes(t *testing.T) {
	b := &Block{Header: &BlockHeader{Number: 3}, Transactions: [][]byte{[]byte("x")},
		Metadata: &BlockMetadata{Signature: &BlockSignature{Signature: []byte("sig")}, ValidationCodes: []byte{9}}}
	raw, err := proto.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	got := new(Block)
	if err := proto.Unmarshal(WithValidationCodes(raw, []byte{0, 11}), got); err != nil {
		t.Fatal(err)
	}
	b.Metadata.ValidationCodes = []byte{0, 11}
	if !proto.Equal(got, b) {
		t.Fatalf("got %v, want %v", got, b)
	}
}
