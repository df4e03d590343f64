package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// A channel config update changes the channel's orderer set: it adds or
// removes one orderer of a Raft ordering service. It is ordered like a
// transaction (Orderer.Submit) and becomes a config block: a block whose
// only transaction is the config envelope's exact bytes, as block 0's
// only transaction is the genesis document.
//
// The envelope is ConfigMagic followed by the JSON of a ConfigEnvelope.
// Its Update field holds the exact bytes of a ConfigUpdate, and each admin
// signs those bytes, so nothing is re-encoded to be verified. The magic
// prefix makes a config envelope impossible to confuse with a Transaction
// (whose protobuf encoding starts with 0x0a).

// ConfigMagic starts every config envelope.
const ConfigMagic = "strand config update v1\n"

// MaxConfigEnvelope bounds a config envelope's size.
const MaxConfigEnvelope = 1 << 20

// ErrBadConfigUpdate: a config envelope or update that does not decode or
// is not well formed.
var ErrBadConfigUpdate = errors.New("api: malformed config update")

// ConfigOrderer is one orderer of the channel's ordering service: its
// Raft id (never reused), org, name (its certificates' CN) and the
// host:port where peers, clients and the other orderers reach it.
type ConfigOrderer struct {
	ID      uint64 `json:"id"`
	Org     string `json:"org"`
	Name    string `json:"name"`
	Address string `json:"address"`
}

// ConfigUpdate is what the admins sign: the channel, the number of config
// updates applied before this one (so an update applies once, in order,
// and a replay is refused), and the complete orderer set after it.
type ConfigUpdate struct {
	Channel  string          `json:"channel"`
	Sequence uint64          `json:"sequence"`
	Orderers []ConfigOrderer `json:"orderers"`
}

// ConfigSignature is one admin's signature over ConfigEnvelope.Update.
type ConfigSignature struct {
	Signer    *Identity `json:"signer"`
	Signature []byte    `json:"signature"`
}

// ConfigEnvelope carries an update's exact bytes and the admins'
// signatures over them.
type ConfigEnvelope struct {
	Update     []byte            `json:"update"`
	Signatures []ConfigSignature `json:"signatures"`
}

// IsConfigEnvelope reports whether raw is a config envelope (by its
// prefix; DecodeConfigEnvelope checks the rest).
func IsConfigEnvelope(raw []byte) bool { return bytes.HasPrefix(raw, []byte(ConfigMagic)) }

// EncodeConfigUpdate encodes u (the bytes admins sign).
func EncodeConfigUpdate(u *ConfigUpdate) ([]byte, error) {
	return json.Marshal(u)
}

// SignConfigUpdate returns an envelope for the update bytes signed by
// each signer, in order.
func SignConfigUpdate(update []byte, signers ...Signer) (*ConfigEnvelope, error) {
	env := &ConfigEnvelope{Update: update}
	for _, s := range signers {
		if err := env.AddSignature(s); err != nil {
			return nil, err
		}
	}
	return env, nil
}

// AddSignature adds s's signature over the update.
func (e *ConfigEnvelope) AddSignature(s Signer) error {
	sig, err := s.Sign(e.Update)
	if err != nil {
		return fmt.Errorf("api: signing config update: %w", err)
	}
	e.Signatures = append(e.Signatures, ConfigSignature{Signer: s.Identity(), Signature: sig})
	return nil
}

// Encode returns the envelope's bytes (ConfigMagic and JSON).
func (e *ConfigEnvelope) Encode() ([]byte, error) {
	js, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("api: encoding config envelope: %w", err)
	}
	return append([]byte(ConfigMagic), js...), nil
}

// ID returns the config update's transaction id: "config-" and the
// hex SHA-256 of the update bytes.
func (e *ConfigEnvelope) ID() string {
	sum := sha256.Sum256(e.Update)
	return "config-" + hex.EncodeToString(sum[:])
}

// DecodeConfigEnvelope decodes a config envelope and its update and checks
// their form: a channel, at least one orderer, ids not 0 and unique, org,
// name and address set, names unique. It checks no signature.
func DecodeConfigEnvelope(raw []byte) (*ConfigEnvelope, *ConfigUpdate, error) {
	if !IsConfigEnvelope(raw) {
		return nil, nil, fmt.Errorf("%w: does not start with %q", ErrBadConfigUpdate, ConfigMagic)
	}
	if len(raw) > MaxConfigEnvelope {
		return nil, nil, fmt.Errorf("%w: %d bytes, at most %d", ErrBadConfigUpdate, len(raw), MaxConfigEnvelope)
	}
	env := &ConfigEnvelope{}
	dec := json.NewDecoder(bytes.NewReader(raw[len(ConfigMagic):]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(env); err != nil {
		return nil, nil, fmt.Errorf("%w: envelope: %v", ErrBadConfigUpdate, err)
	}
	u := &ConfigUpdate{}
	dec = json.NewDecoder(bytes.NewReader(env.Update))
	dec.DisallowUnknownFields()
	if err := dec.Decode(u); err != nil {
		return nil, nil, fmt.Errorf("%w: update: %v", ErrBadConfigUpdate, err)
	}
	if u.Channel == "" {
		return nil, nil, fmt.Errorf("%w: update names no channel", ErrBadConfigUpdate)
	}
	if len(u.Orderers) == 0 {
		return nil, nil, fmt.Errorf("%w: update leaves no orderer", ErrBadConfigUpdate)
	}
	ids, names := map[uint64]bool{}, map[string]bool{}
	for i, o := range u.Orderers {
		key := o.Org + "/" + o.Name
		switch {
		case o.ID == 0:
			return nil, nil, fmt.Errorf("%w: orderers[%d] (%s) has id 0", ErrBadConfigUpdate, i, key)
		case ids[o.ID]:
			return nil, nil, fmt.Errorf("%w: orderers[%d] (%s) repeats id %d", ErrBadConfigUpdate, i, key, o.ID)
		case o.Org == "" || o.Name == "" || o.Address == "":
			return nil, nil, fmt.Errorf("%w: orderers[%d] (id %d) has org %q, name %q, address %q; want all three",
				ErrBadConfigUpdate, i, o.ID, o.Org, o.Name, o.Address)
		case names[key]:
			return nil, nil, fmt.Errorf("%w: orderers[%d] repeats orderer %s", ErrBadConfigUpdate, i, key)
		}
		ids[o.ID], names[key] = true, true
	}
	for i, s := range env.Signatures {
		if s.Signer == nil || len(s.Signature) == 0 {
			return nil, nil, fmt.Errorf("%w: signatures[%d] lacks a signer or a signature", ErrBadConfigUpdate, i)
		}
	}
	return env, u, nil
}
