package api

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// ChannelOf returns the channel that raw, something submitted to an
// orderer, names: a Transaction's header channel, or the channel of a
// config or membership update envelope. It reads only what it needs (a
// transaction's payload header, without its creator or endorsements), so
// an orderer process that orders several channels can route a submission
// to the orderer of its channel before that one decodes and checks it in
// full. It is a routing hint, not a check: the orderer it routes to
// decodes the whole transaction and refuses one whose header names
// another channel, so a reading that differed from DecodeTx's could
// cause a refusal, never an admission to the wrong channel.
func ChannelOf(raw []byte) (string, error) {
	switch {
	case IsConfigEnvelope(raw):
		return envelopeChannel(raw[len(ConfigMagic):])
	case IsMembersEnvelope(raw):
		return envelopeChannel(raw[len(MembersMagic):])
	}
	payload, err := lastBytes(raw, 1)
	if err != nil {
		return "", err
	}
	hdr, err := lastBytes(payload, 1)
	if err != nil {
		return "", err
	}
	ch, err := lastBytes(hdr, 1)
	if err != nil {
		return "", err
	}
	return stringField(ch)
}

// lastBytes returns the last occurrence of bytes field num in message b
// (what proto.Unmarshal keeps of a repeated scalar; a message field that
// occurs twice is merged by protobuf, and the orderer's full decode
// decides what that means).
func lastBytes(b []byte, num protowire.Number) ([]byte, error) {
	var out []byte
	err := walk(b, func(f field) error {
		if f.num == num && f.typ == protowire.BytesType {
			out = f.v
		}
		return nil
	})
	return out, err
}

// envelopeChannel reads the channel of a config or membership update
// envelope's JSON: the "channel" of the update its "update" field holds.
func envelopeChannel(js []byte) (string, error) {
	if len(js) > MaxConfigEnvelope {
		return "", fmt.Errorf("%w: %d bytes, at most %d", ErrBadConfigUpdate, len(js), MaxConfigEnvelope)
	}
	var env struct {
		Update []byte `json:"update"`
	}
	if err := json.NewDecoder(bytes.NewReader(js)).Decode(&env); err != nil {
		return "", fmt.Errorf("%w: envelope: %v", ErrBadConfigUpdate, err)
	}
	var u struct {
		Channel string `json:"channel"`
	}
	if err := json.Unmarshal(env.Update, &u); err != nil {
		return "", fmt.Errorf("%w: update: %v", ErrBadConfigUpdate, err)
	}
	return u.Channel, nil
}
