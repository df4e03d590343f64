package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// A membership update changes the channel's member orgs: it adds orgs,
// removes orgs, and replaces their certificate revocation lists. Like a config update (config.go) it is signed by org
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

// MaxMembersOrgs bounds the orgs one update adds and removes, and
// MaxOrgCAs the CA certificates of one added org's definition (each
// list); MaxOrgID the bytes of an org's ID.
const (
	MaxMembersOrgs = 16
	MaxOrgCAs      = 8
	MaxOrgID       = 64
)

// MaxOrgPeers bounds the peers of one added org's definition, and
// MaxPeerField the bytes of a peer's name and of its address.
const (
	MaxOrgPeers  = 16
	MaxPeerField = 256
)

// MembersUpdate is what the admins sign: the channel, the number of
// membership updates applied before this one (so an update applies once,
// in order, and a replay is refused as stale), for each org it names,
// that org's new certificate revocation list (X.509 DER, signed by one
// of the org's CAs), which replaces the org's list in force, the orgs it
// adds, and the IDs of the orgs it removes. An update carries at least
// one of the three.
type MembersUpdate struct {
	Channel  string       `json:"channel"`
	Sequence uint64       `json:"sequence"`
	CRLs     []MembersCRL `json:"crls,omitempty"`
	Add      []MembersOrg `json:"add,omitempty"`
	Remove   []string     `json:"remove,omitempty"`
}

// MembersOrg is an org's definition as an update adds it: its ID, the
// DER certificates of the CAs that issue its members' certificates and
// its TLS certificates (identity.ParseOrgDef checks them), and its peers
// that other orgs' gateways ask for endorsements (Fabric's anchor peers:
// without them no other org's gateway can satisfy a policy that names
// the org). Its admins are its certificates with the admin role, as for
// a genesis org.
type MembersOrg struct {
	ID         string        `json:"id"`
	CACerts    [][]byte      `json:"ca_certs"`
	TLSCACerts [][]byte      `json:"tls_ca_certs"`
	Peers      []MembersPeer `json:"peers,omitempty"`
}

// MembersPeer is one peer of an added org: its name (in messages) and
// the HOST:PORT other orgs' peers dial. Its TLS certificate must chain to
// a TLS CA of the org's definition.
type MembersPeer struct {
	Name    string `json:"name"`
	Address string `json:"address"`
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
// update and checks their form: a channel; at most MaxMembersCRLs CRLs,
// each naming an org (once) and holding bytes; at most MaxMembersOrgs
// orgs added and removed, each a valid org ID (ValidOrgID) named once
// across both, an added one with 1 to MaxOrgCAs CA and TLS CA
// certificates and at most MaxOrgPeers peers (CheckOrgPeers); at least one
// CRL, add or remove; and every signature
// with a signer. It checks no signature and parses no CRL or
// certificate.
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
	case len(u.CRLs) == 0 && len(u.Add) == 0 && len(u.Remove) == 0:
		return nil, nil, fmt.Errorf("%w: membership update carries no CRL, add or remove", ErrBadConfigUpdate)
	case len(u.Add)+len(u.Remove) > MaxMembersOrgs:
		return nil, nil, fmt.Errorf("%w: membership update adds and removes %d orgs, at most %d", ErrBadConfigUpdate, len(u.Add)+len(u.Remove), MaxMembersOrgs)
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
	if err := checkOrgChanges(u); err != nil {
		return nil, nil, err
	}
	for i, s := range env.Signatures {
		if s.Signer == nil || len(s.Signature) == 0 {
			return nil, nil, fmt.Errorf("%w: signatures[%d] lacks a signer or a signature", ErrBadConfigUpdate, i)
		}
	}
	return env, u, nil
}

// checkOrgChanges checks the form of u's adds and removes.
func checkOrgChanges(u *MembersUpdate) error {
	named := map[string]bool{}
	name := func(what string, i int, id string) error {
		if err := ValidOrgID(id); err != nil {
			return fmt.Errorf("%w: %s[%d]: %v", ErrBadConfigUpdate, what, i, err)
		}
		if named[id] {
			return fmt.Errorf("%w: %s[%d]: org %q is added or removed twice", ErrBadConfigUpdate, what, i, id)
		}
		named[id] = true
		return nil
	}
	for i, o := range u.Add {
		if err := name("add", i, o.ID); err != nil {
			return err
		}
		for _, l := range []struct {
			field string
			certs [][]byte
		}{{"ca_certs", o.CACerts}, {"tls_ca_certs", o.TLSCACerts}} {
			if len(l.certs) == 0 || len(l.certs) > MaxOrgCAs {
				return fmt.Errorf("%w: add[%d] (org %q) has %d %s, want 1 to %d", ErrBadConfigUpdate, i, o.ID, len(l.certs), l.field, MaxOrgCAs)
			}
			for j, c := range l.certs {
				if len(c) == 0 {
					return fmt.Errorf("%w: add[%d] (org %q): %s[%d] is empty", ErrBadConfigUpdate, i, o.ID, l.field, j)
				}
			}
		}
		if err := CheckOrgPeers(o.Peers); err != nil {
			return fmt.Errorf("%w: add[%d] (org %q): %v", ErrBadConfigUpdate, i, o.ID, err)
		}
	}
	for i, id := range u.Remove {
		if err := name("remove", i, id); err != nil {
			return err
		}
	}
	return nil
}

// ValidOrgID checks an org ID an update adds or removes: 1 to MaxOrgID
// bytes of letters, digits, '.', '_' and '-', starting with a letter or
// digit (it keys state and names principals in policies).
func ValidOrgID(id string) error {
	if id == "" || len(id) > MaxOrgID {
		return fmt.Errorf("org ID %q has %d bytes, want 1 to %d", id, len(id), MaxOrgID)
	}
	for i, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')
		if !ok {
			return fmt.Errorf("org ID %q: byte %d (%q) is not a letter, digit, '.', '_' or '-' (or starts the ID)", id, i, c)
		}
	}
	return nil
}

// CheckOrgPeers checks an added org's peers: at most MaxOrgPeers, each
// with a name (printable, no space) and an address HOST:PORT with a
// numeric port, of at most MaxPeerField bytes each, no name or address
// twice.
func CheckOrgPeers(peers []MembersPeer) error {
	if len(peers) > MaxOrgPeers {
		return fmt.Errorf("%d peers, at most %d", len(peers), MaxOrgPeers)
	}
	seen := map[string]bool{}
	for j, p := range peers {
		switch {
		case p.Name == "" || len(p.Name) > MaxPeerField || strings.IndexFunc(p.Name, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0:
			return fmt.Errorf("peers[%d]: name %q: want 1 to %d printable ASCII bytes without spaces", j, p.Name, MaxPeerField)
		case len(p.Address) > MaxPeerField:
			return fmt.Errorf("peers[%d] (%s): address of %d bytes, at most %d", j, p.Name, len(p.Address), MaxPeerField)
		case seen["n"+p.Name]:
			return fmt.Errorf("peers[%d]: name %q given twice", j, p.Name)
		case seen["a"+p.Address]:
			return fmt.Errorf("peers[%d] (%s): address %q given twice", j, p.Name, p.Address)
		}
		host, port, err := net.SplitHostPort(p.Address)
		if err == nil && host == "" {
			err = errors.New("no host")
		}
		if n, perr := strconv.ParseUint(port, 10, 16); err == nil && (perr != nil || n == 0) {
			err = fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
		if err != nil {
			return fmt.Errorf("peers[%d] (%s): address %q: %v, want HOST:PORT", j, p.Name, p.Address, err)
		}
		seen["n"+p.Name], seen["a"+p.Address] = true, true
	}
	return nil
}
