package lifecycle

import (
	"fmt"
	"strings"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/policy"
)

// CheckWrites is the stateless check of a definition transaction's
// read/write set (committer stage 1): one namespace, Namespace; no reads;
// exactly one write of DefKey(name) holding a definition for channel
// whose policy names only orgs for which isOrg is true; for wasm and
// external exactly one more write, CodeKey(hash), holding the module or
// connection package of that hash (compressed or not: UnpackCode);
// nothing else. It returns the decoded definition and its code, unpacked
// (nil for builtin).
func CheckWrites(channel string, isOrg func(string) bool, rw *api.RWSet) (*Definition, []byte, error) {
	if len(rw.GetNamespaces()) != 1 || rw.Namespaces[0].Namespace != Namespace {
		return nil, nil, fmt.Errorf("%w: a definition transaction touches exactly the namespace %s", ErrMalformed, Namespace)
	}
	ns := rw.Namespaces[0]
	if len(ns.Reads) > 0 || len(ns.RangeReads) > 0 {
		return nil, nil, fmt.Errorf("%w: a definition transaction reads nothing (it has %d reads, %d range reads)", ErrMalformed, len(ns.Reads), len(ns.RangeReads))
	}
	var def *Definition
	var code []byte
	var codeKey string
	for _, w := range ns.Writes {
		switch {
		case w.IsDelete:
			return nil, nil, fmt.Errorf("%w: a definition transaction deletes %q; it only writes", ErrMalformed, w.Key)
		case strings.HasPrefix(w.Key, DefPrefix) && def == nil:
			d, err := Decode(w.Value)
			if err != nil {
				return nil, nil, err
			}
			if w.Key != DefKey(d.Name) {
				return nil, nil, fmt.Errorf("%w: definition of %q written under key %q, want %q", ErrMalformed, d.Name, w.Key, DefKey(d.Name))
			}
			def = d
		case strings.HasPrefix(w.Key, "code/") && codeKey == "":
			codeKey, code = w.Key, w.Value
		default:
			return nil, nil, fmt.Errorf("%w: a definition transaction writes one %s<name> and, for wasm, one code/<hash>; key %q is extra",
				ErrMalformed, DefPrefix, w.Key)
		}
	}
	if def == nil {
		return nil, nil, fmt.Errorf("%w: a definition transaction writes no %s<name> key", ErrMalformed, DefPrefix)
	}
	if def.Channel != channel {
		return nil, nil, fmt.Errorf("%w: definition of %q is for channel %q, this is %q", ErrMalformed, def.Name, def.Channel, channel)
	}
	if err := checkOrgs(def.Name, def.Parsed, isOrg); err != nil {
		return nil, nil, err
	}
	noun := codeNoun(def.Runtime)
	switch {
	case !HasCode(def.Runtime) && codeKey != "":
		return nil, nil, fmt.Errorf("%w: builtin contract %q carries code under %q", ErrMalformed, def.Name, codeKey)
	case !HasCode(def.Runtime):
	case codeKey == "":
		return nil, nil, fmt.Errorf("%w: %s contract %q carries no %s (want a write of %q)", ErrMalformed, def.Runtime, def.Name, noun, CodeKey(def.CodeHash))
	case codeKey != CodeKey(def.CodeHash):
		return nil, nil, fmt.Errorf("%w: %s contract %q has code hash %s but its %s is written under %q", ErrCodeHash, def.Runtime, def.Name, def.CodeHash, noun, codeKey)
	case len(code) > MaxCodeBytes:
		return nil, nil, fmt.Errorf("%w: %s contract %q: %s of %d bytes, at most %d", ErrMalformed, def.Runtime, def.Name, noun, len(code), MaxCodeBytes)
	default:
		unpacked, err := UnpackCode(code)
		if err != nil {
			return nil, nil, fmt.Errorf("%s contract %q: %s: %w", def.Runtime, def.Name, noun, err)
		}
		if h := CodeHash(unpacked); h != def.CodeHash {
			return nil, nil, fmt.Errorf("%w: %s contract %q: the %s carried has SHA-256 %s, the definition says %s", ErrCodeHash, def.Runtime, def.Name, noun, h, def.CodeHash)
		}
		code = unpacked
	}
	return def, code, nil
}

func checkOrgs(name string, p *policy.Policy, isOrg func(string) bool) error {
	for _, org := range p.Orgs() {
		if !isOrg(org) {
			return fmt.Errorf("%w: contract %q: policy %s names org %q, which is not an org of the channel", ErrPolicy, name, p, org)
		}
	}
	return nil
}

// Writes returns the read/write set a definition transaction carries for
// def (encoded) and its code (nil for builtin; a wasm module is carried
// compressed, PackCode): what CheckWrites accepts.
func Writes(def *Definition, code []byte) *api.RWSet {
	ws := []*api.KVWrite{{Key: DefKey(def.Name), Value: def.Raw}}
	if HasCode(def.Runtime) {
		ws = append(ws, &api.KVWrite{Key: CodeKey(def.CodeHash), Value: PackCode(def.Runtime, code)})
	}
	return &api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: Namespace, Writes: ws}}}
}

// DefaultPolicy is the lifecycle policy of a channel that sets none:
// the admins of a majority of orgs, as Fabric's MAJORITY Endorsement
// (OutOf(n/2+1, 'Org1.admin', ...)). orgs are the orgs that count: those
// with peers.
func DefaultPolicy(orgs []string) (*policy.Policy, error) {
	if len(orgs) == 0 {
		return nil, fmt.Errorf("%w: no org to approve definitions", ErrPolicy)
	}
	admins := make([]string, len(orgs))
	for i, o := range orgs {
		admins[i] = "'" + o + ".admin'"
	}
	return policy.Parse(fmt.Sprintf("OutOf(%d, %s)", len(orgs)/2+1, strings.Join(admins, ", ")))
}

// Bind adds to rw, the read/write set of a call of contract name, a read
// of name's definition record (Namespace, DefKey(name)) at at: the
// version of the definition the call ran under (Definition.At), nil for a
// contract of the genesis channel file, whose record is absent. The
// committer checks it like any read, so a transaction simulated under one
// definition and ordered after the next one commits is
// MVCC_READ_CONFLICT (Fabric's endorsements bind to the chaincode
// definition alike). The read touches no key the contract can write (a
// contract writes only its own namespace, api.checkRWSet) and adds no
// policy: the committer takes a transaction's policy from its contract
// alone.
func Bind(rw *api.RWSet, name string, at *api.Version) {
	rw.Namespaces = append(rw.Namespaces, &api.NsRWSet{
		Namespace: Namespace,
		Reads:     []*api.KVRead{{Key: DefKey(name), Version: at}},
	})
}
