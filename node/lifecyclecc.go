package node

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/identity"
)

// DefinitionInfo is one contract as `strand contract list/show` prints
// it: the definition in force on the peer that answered.
type DefinitionInfo struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Sequence uint64 `json:"sequence"`
	Runtime  string `json:"runtime"`
	CodeHash string `json:"codeHash,omitempty"`
	Policy   string `json:"policy"`
	Init     string `json:"init,omitempty"`
	Fuel     int64  `json:"fuel,omitempty"` // wasm: the budget of a call; 0 the peer's default
	// Genesis is true for a contract of the channel file not redefined
	// since.
	Genesis bool `json:"genesis,omitempty"`
}

// RevocationsInfo is the certificate revocation lists in force on the
// peer that answered (`strand channel revoke` waits on it): the number
// of membership updates applied and each org's list.
type RevocationsInfo struct {
	Sequence uint64    `json:"sequence"`
	CRLs     []CRLInfo `json:"crls"`
	// Removed are the orgs membership updates removed, sorted.
	Removed []string `json:"removed,omitempty"`
}

// CRLInfo is one org's revocation list in force.
type CRLInfo struct {
	Org     string   `json:"org"`
	Number  string   `json:"number"`
	Serials []string `json:"serials"` // hex
}

// lifecycleContract answers queries of the reserved contract
// lifecycle.Namespace on this peer: "list" (every definition in force),
// "show NAME", and "revocations" (the certificate revocation lists in
// force at the peer's committed height, RevocationsInfo). It only reads; a transaction of it would fail
// validation (a definition transaction is built by its deployer and
// signed by org admins, not endorsed by peers).
type lifecycleContract struct {
	defs        func() *lifecycle.Table
	genesis     map[string]ContractConfig
	revocations func() *identity.Revocations
}

func (l lifecycleContract) Invoke(stub contract.Stub) ([]byte, error) {
	t := l.defs()
	switch fn, args := stub.Function(), stub.Args(); {
	case fn == "list" && len(args) == 0:
		out := make([]DefinitionInfo, 0, t.Len())
		for _, name := range t.Names() {
			out = append(out, l.info(t, name))
		}
		return json.Marshal(out)
	case fn == "show" && len(args) == 1:
		name := string(args[0])
		if _, ok := t.Get(name); !ok {
			return nil, &contract.Error{Status: 404, Message: "contract " + name + " is not defined on this channel (strand contract list shows those that are)"}
		}
		return json.Marshal(l.info(t, name))
	case fn == "revocations" && len(args) == 0 && l.revocations != nil:
		rv := l.revocations()
		out := RevocationsInfo{Sequence: rv.Sequence(), CRLs: []CRLInfo{}}
		for _, c := range rv.CRLs() {
			out.CRLs = append(out.CRLs, CRLInfo{Org: c.Org, Number: c.Number.String(), Serials: c.Serials()})
		}
		out.Removed = slices.Sorted(maps.Keys(rv.Removed()))
		return json.Marshal(out)
	}
	return nil, contract.Errorf("%s has the functions list, show NAME and revocations; got %q with %d arguments", lifecycle.Namespace, stub.Function(), len(stub.Args()))
}

func (l lifecycleContract) info(t *lifecycle.Table, name string) DefinitionInfo {
	e, _ := t.Get(name)
	if d := e.Def; d != nil {
		return DefinitionInfo{Name: name, Version: d.Version, Sequence: d.Sequence, Runtime: d.Runtime, CodeHash: d.CodeHash, Policy: d.Policy, Init: d.Init, Fuel: d.Fuel}
	}
	g := l.genesis[name]
	rt := g.Runtime
	if rt == "" {
		rt = RuntimeBuiltin
	}
	return DefinitionInfo{Name: name, Version: "genesis", Sequence: e.Sequence, Runtime: rt, CodeHash: g.Hash, Policy: e.Policy.String(), Genesis: true}
}
