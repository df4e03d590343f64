package identity

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/strand-ledger/strand/api"
)

// ErrNoMajority: signatures that do not come from admins of a majority of
// the registry's orgs.
var ErrNoMajority = errors.New("identity: not signed by a majority of the orgs' admins")

// AdminMajority checks that sigs hold valid signatures over msg by admins
// of more than half of the registry's orgs; one signature per org counts,
// and signatures that do not verify, or are not an admin's, count for
// nothing. It reads no clock (certificate expiry is the caller's
// business), so every node decides alike. The error names the orgs that
// signed, the majority wanted, and why the others did not count. Channel
// config updates use it (api/config.go).
func (r *Registry) AdminMajority(msg []byte, sigs []api.ConfigSignature) error {
	return r.AdminMajorityUnder(nil, msg, sigs)
}

// AdminMajorityUnder is AdminMajority over the member orgs under rv
// (MembersUnder): an admin whose certificate rv revokes, or whose org is
// not a member under rv (removed, or not yet added), counts for nothing,
// and the majority is of the orgs that are members.
func (r *Registry) AdminMajorityUnder(rv *Revocations, msg []byte, sigs []api.ConfigSignature) error {
	return r.AdminMajorityExcept(rv, nil, msg, sigs)
}

// AdminMajorityExcept is AdminMajorityUnder over the member orgs under rv
// less those of except: a membership update that removes orgs is signed
// by a majority of the orgs that stay, and a removed org's admin counts
// for nothing (as an added org's does not count toward its own
// admission: it is not a member under rv).
func (r *Registry) AdminMajorityExcept(rv *Revocations, except []string, msg []byte, sigs []api.ConfigSignature) error {
	signed := map[string]bool{}
	var bad []string
	signedMsg := NewMessage(msg) // every admin signs the same bytes
	for i, s := range sigs {
		m, err := r.Member(s.Signer)
		if err != nil {
			bad = append(bad, fmt.Sprintf("signatures[%d]: %v", i, err))
			continue
		}
		if err := rv.Check(m); err != nil {
			bad = append(bad, fmt.Sprintf("signatures[%d]: %v", i, err))
			continue
		}
		if slices.Contains(except, m.Org) {
			bad = append(bad, fmt.Sprintf("signatures[%d]: %s/%s: org %s is being removed", i, m.Org, m.Name, m.Org))
			continue
		}
		if m.Role != RoleAdmin {
			bad = append(bad, fmt.Sprintf("signatures[%d]: %s/%s has role %s, want admin", i, m.Org, m.Name, m.Role))
			continue
		}
		if err := m.VerifyMessage(&signedMsg, s.Signature); err != nil {
			bad = append(bad, fmt.Sprintf("signatures[%d]: %v", i, err))
			continue
		}
		signed[m.Org] = true
	}
	ids := slices.DeleteFunc(r.MembersUnder(rv), func(o string) bool { return slices.Contains(except, o) })
	if 2*len(signed) > len(ids) {
		return nil
	}
	have := make([]string, 0, len(signed))
	for o := range signed {
		have = append(have, o)
	}
	sort.Strings(have)
	why := fmt.Sprintf("signed by the admins of %d of the channel's %d orgs (%s), want a majority: %d of %s",
		len(signed), len(ids), strings.Join(have, ", "), len(ids)/2+1, strings.Join(ids, ", "))
	if len(bad) > 0 {
		why += "; not counted: " + strings.Join(bad, "; ")
	}
	return fmt.Errorf("%w: %s", ErrNoMajority, why)
}
