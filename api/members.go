package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// A membership update changes the channel's member orgs' certificate
// revocation lists. Like a config update (config.go) it is signed by org
// admins and ordered like a transaction, but it changes no orderer set:
// it is a transaction of its own kind, checked by the orderer at its
// door and by every peer's committer, and in force from the block after
// the one that carries it (docs/membership.md).
//
// The envelope is MembersMagic followed by the JSON of a ConfigEnvelope
// whose Update holds the exact bytes of a MembersUpdate: admins sign
// those bytes, as they sign a ConfigUpdate's. The two magics differ, so
// neither can be mistaken for the other or for a Transaction.

// MembersMagic starts every membership update envelope.
const MembersMagic = "strand membership update v1\n"

// MaxMembersCRLs bounds the revocation lists one update carries.
const MaxMembersCRLs = 64

// MembersUpdate is what the admins sign: the channel, the number of
// membership updates applied before this one (so an update applies once,
// in order, and a replay is refused as stale), and for each org it
// names, that org's new certificate revocation list (X.509 DER, signed
// by one of the org's CAs), which replaces the org's list in force.
type MembersUpdate struct {
	Channel  string       `json:"channel"`
	Sequence uint64       `json:"sequence"`
	CRLs     []MembersCRL `json:"crls"`
}

// MembersCRL is one org's certificate revocation list.
type MembersCRL struct {
	Org string `json:"org"`
	CRL []byte `json:"crl"`
}

// MembersID returns the transaction id of the membership update envelope
// raw: "members-" and the hex SHA-256 of its bytes (signatures included,
// so an update refused for too few signatures can be signed again and
// submitted; its sequence keeps it from applying twice).
func MembersID(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "members-" + hex.EncodeToString(sum[:])
}

// IsMembersEnvelope reports whether raw is a membership update envelope
// (by its prefix; DecodeMembersEnvelope checks the rest).
func IsMembersEnvelope(raw []byte) bool { return bytes.HasPrefix(raw, []byte(MembersMagic)) }

// EncodeMembersUpdate encodes u (the bytes admins sign).
func EncodeMembersUpdate(u *MembersUpdate) ([]byte, error) { return json.Marshal(u) }

// EncodeMembers returns the bytes of e as a membership update envelope
// (MembersMagic and JSON).
func EncodeMembers(e *ConfigEnvelope) ([]byte, error) {
	js, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("api: encoding membership update: %w", err)
	}
	return append([]byte(MembersMagic), js...), nil
}

// DecodeMembersEnvelope decodes a membership update envelope and its
// update and checks their form: a channel, at least one CRL and at most
// MaxMembersCRLs, each naming an org (once) and holding bytes, and every
// signature with a signer. It checks no signature and parses no CRL.
func DecodeMembersEnvelope(raw []byte) (*ConfigEnvelope, *MembersUpdate, error) {
	if !IsMembersEnvelope(raw) {
		return nil, nil, fmt.Errorf("%w: does not start with %q", ErrBadConfigUpdate, MembersMagic)
	}
	if len(raw) > MaxConfigEnvelope {
		return nil, nil, fmt.Errorf("%w: membership update of %d bytes, at most %d", ErrBadConfigUpdate, len(raw), MaxConfigEnvelope)
	}
	env := &ConfigEnvelope{}
	dec := json.NewDecoder(bytes.NewReader(raw[len(MembersMagic):]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(env); err != nil {
		return nil, nil, fmt.Errorf("%w: membership envelope: %v", ErrBadConfigUpdate, err)
	}
	u := &MembersUpdate{}
	dec = json.NewDecoder(bytes.NewReader(env.Update))
	dec.DisallowUnknownFields()
	if err := dec.Decode(u); err != nil {
		return nil, nil, fmt.Errorf("%w: membership update: %v", ErrBadConfigUpdate, err)
	}
	switch {
	case u.Channel == "":
		return nil, nil, fmt.Errorf("%w: membership update names no channel", ErrBadConfigUpdate)
	case len(u.CRLs) == 0:
		return nil, nil, fmt.Errorf("%w: membership update carries no CRL", ErrBadConfigUpdate)
	case len(u.CRLs) > MaxMembersCRLs:
		return nil, nil, fmt.Errorf("%w: membership update carries %d CRLs, at most %d", ErrBadConfigUpdate, len(u.CRLs), MaxMembersCRLs)
	}
	orgs := map[string]bool{}
	for i, c := range u.CRLs {
		switch {
		case c.Org == "" || len(c.CRL) == 0:
			return nil, nil, fmt.Errorf("%w: crls[%d] has org %q and %d bytes; want both", ErrBadConfigUpdate, i, c.Org, len(c.CRL))
		case orgs[c.Org]:
			return nil, nil, fmt.Errorf("%w: crls[%d] repeats org %q", ErrBadConfigUpdate, i, c.Org)
		}
		orgs[c.Org] = true
	}
	for i, s := range env.Signatures {
		if s.Signer == nil || len(s.Signature) == 0 {
			return nil, nil, fmt.Errorf("%w: signatures[%d] lacks a signer or a signature", ErrBadConfigUpdate, i)
		}
	}
	return env, u, nil
}
