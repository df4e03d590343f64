package node

import (
	"encoding/pem"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contract/external"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/contract/wasm/wasmtest"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
)

// TestContractLoader: a definition becomes code this peer runs, or a
// contract that refuses every call naming why (hash mismatch, unknown
// builtin, module missing or not compiling); a definition loaded once is
// not loaded again.
func TestContractLoader(t *testing.T) {
	code := wasmtest.C(t, "examples/kv-c/kv.c")
	engine, err := wasm.NewEngine(wasm.Options{CacheDir: wasmtest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	db := memdb.New()
	var b statedb.Batch
	b.Put(lifecycle.Namespace, lifecycle.CodeKey(wasm.Hash(code)), code, statedb.Version{Block: 1})
	junk := []byte("not a module")
	b.Put(lifecycle.Namespace, lifecycle.CodeKey(wasm.Hash(junk)), junk, statedb.Version{Block: 1})
	pkg, err := (&external.Package{Address: "127.0.0.1:1", RootCert: string(testCAPEM(t))}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	b.Put(lifecycle.Namespace, lifecycle.CodeKey(external.Hash(pkg)), pkg, statedb.Version{Block: 1})
	tampered := strings.Repeat("ab", 32)
	b.Put(lifecycle.Namespace, lifecycle.CodeKey(tampered), code, statedb.Version{Block: 1})
	if err := db.Apply(&b, 2, false); err != nil {
		t.Fatal(err)
	}
	def := func(name, runtime, hash string) *lifecycle.Definition {
		d := &lifecycle.Definition{Channel: "ch", Name: name, Version: "1", Sequence: 1, Runtime: runtime, CodeHash: hash, Policy: "OR('Org1.peer')"}
		if _, err := d.Encode(); err != nil {
			t.Fatal(err)
		}
		return d
	}
	fuelled := &lifecycle.Definition{Channel: "ch", Name: "fuelled", Version: "1", Sequence: 1, Runtime: lifecycle.RuntimeWasm,
		CodeHash: wasm.Hash(code), Policy: "OR('Org1.peer')", Fuel: 1}
	inited := &lifecycle.Definition{Channel: "ch", Name: "kv2", Version: "1", Sequence: 3, Runtime: lifecycle.RuntimeWasm,
		CodeHash: wasm.Hash(code), Policy: "OR('Org1.peer')", Init: "setup"}
	for _, d := range []*lifecycle.Definition{fuelled, inited} {
		if _, err := d.Encode(); err != nil {
			t.Fatal(err)
		}
	}
	defs := []*lifecycle.Definition{
		fuelled, inited,
		def("good", lifecycle.RuntimeWasm, wasm.Hash(code)),
		def("kv", lifecycle.RuntimeBuiltin, ""),
		def("nobuiltin", lifecycle.RuntimeBuiltin, ""),
		def("missing", lifecycle.RuntimeWasm, strings.Repeat("cd", 32)),
		def("junk", lifecycle.RuntimeWasm, wasm.Hash(junk)),
		def("tampered", lifecycle.RuntimeWasm, tampered),
		def("ext", lifecycle.RuntimeExternal, external.Hash(pkg)),
		def("extjunk", lifecycle.RuntimeExternal, wasm.Hash(junk)),
	}
	ext, err := external.New(external.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	l := &contractLoader{channel: "ch", builtins: DefaultBuiltins(), engine: engine, external: ext, state: db, log: slog.New(slog.DiscardHandler),
		genesis: map[string]contract.Contract{"gen": refusing{}}}
	defs[3].At = &api.Version{Block: 7, Tx: 2} // kv, as the committer read it
	table := lifecycle.NewTable(nil, defs)
	cs, loaded := l.load(table)
	if d := loaded["kv"]; d.Sequence != 1 || d.At != defs[3].At {
		t.Errorf("kv loaded as %+v, want sequence 1 at its definition's version %v (what its calls read)", d, defs[3].At)
	}
	if _, ok := cs["good"].(*wasm.Module); !ok {
		t.Errorf("good is %T, want a *wasm.Module", cs["good"])
	}
	// The definition's budget, 1 unit, ends a call at its first charge,
	// before it reads anything.
	if _, err := cs["fuelled"].Invoke(bareStub{}); !errors.Is(err, wasm.ErrFuel) || !strings.Contains(err.Error(), "budget of 1 units") {
		t.Errorf("fuelled: Invoke = %v, want ErrFuel with the definition's budget of 1", err)
	}
	if g, ok := cs["kv2"].(initGuard); !ok || g.init != "setup" || g.seq != "3" {
		t.Errorf("kv2 is %T %+v, want an initGuard of setup at sequence 3", cs["kv2"], cs["kv2"])
	}
	if x, ok := cs["ext"].(*external.Contract); !ok || x.Address() != "127.0.0.1:1" {
		t.Errorf("ext is %T, want an *external.Contract of 127.0.0.1:1", cs["ext"])
	}
	if _, ok := cs["kv"].(refusing); ok {
		t.Errorf("the built-in kv refuses")
	}
	for name, want := range map[string]error{"nobuiltin": ErrCodeUnavailable, "missing": ErrCodeUnavailable, "junk": ErrCodeUnavailable, "tampered": ErrCodeHash, "extjunk": ErrCodeUnavailable} {
		r, ok := cs[name].(refusing)
		if !ok || !errors.Is(r.err, want) || !strings.Contains(r.err.Error(), name) {
			t.Errorf("%s: %T %v, want a refusing contract with %v naming it", name, cs[name], r.err, want)
			continue
		}
		if _, err := r.Invoke(nil); err == nil || !strings.Contains(err.Error(), want.Error()) {
			t.Errorf("%s: Invoke = %v, want the refusal", name, err)
		}
	}
	if again, _ := l.load(table); again["good"] != cs["good"] {
		t.Errorf("loading the same definitions again made a new contract")
	}
	// A compute node decodes the definitions again from its memory node:
	// the same bytes keep their contract.
	var redecoded []*lifecycle.Definition
	for _, d := range defs {
		r, err := lifecycle.Decode(d.Raw)
		if err != nil {
			t.Fatal(err)
		}
		redecoded = append(redecoded, r)
	}
	again, seqs := l.load(lifecycle.NewTable(nil, redecoded))
	if again["good"] != cs["good"] || seqs["kv2"].Sequence != 3 || seqs["good"].Sequence != 1 {
		t.Errorf("loading the same definitions decoded again: a new contract (%v) or definitions %v; want the same contract, kv2 at 3 and good at 1", again["good"] != cs["good"], seqs)
	}
}

// bareStub serves a call that reads nothing.
type bareStub struct{ contract.Stub }

func (bareStub) Function() string     { return "get" }
func (bareStub) Timestamp() time.Time { return time.Unix(1, 0) }

// TestChannelLifecyclePolicy: the default lifecycle policy is a majority
// of the admins of the orgs with peers; a set one is part of the genesis
// document and must name channel orgs; '_' names are reserved.
func TestChannelLifecyclePolicy(t *testing.T) {
	dir := writeNet(t, channelYAML, nodeYAML)
	ch, err := LoadChannel(dir + "/channel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := ch.LifecyclePolicy().String(); got != "OutOf(2,'Org1.admin','Org2.admin')" {
		t.Errorf("default lifecycle policy %s, want a majority of Org1 and Org2 admins (OrdererOrg has no peers)", got)
	}
	plain := ch.Hash()
	set := writeNet(t, channelYAML+"lifecycle: OR('Org1.admin')\n", nodeYAML)
	ch2, err := LoadChannel(set + "/channel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ch2.LifecyclePolicy().String() != "OR('Org1.admin')" || !strings.Contains(string(ch2.Genesis()), `"Lifecycle":"OR('Org1.admin')"`) {
		t.Errorf("a set lifecycle policy: %s, genesis %s", ch2.LifecyclePolicy(), ch2.Genesis())
	}
	if strings.Contains(string(ch.Genesis()), "Lifecycle") || plain == "" {
		t.Errorf("an unset lifecycle policy is in the genesis document: %s", ch.Genesis())
	}
	for _, c := range []struct{ yaml, want string }{
		{channelYAML + "lifecycle: OR('Org9.admin')\n", "lifecycle"},
		{channelYAML + "lifecycle: OR(\n", "lifecycle"},
		{strings.Replace(channelYAML, "{name: kv,", "{name: _kv,", 1), "reserved"},
	} {
		d := writeNet(t, c.yaml, nodeYAML)
		if _, err := LoadChannel(d + "/channel.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadChannel: %v, want an error naming %q", err, c.want)
		}
	}
}

// testCAPEM is a self-signed certificate, enough for a connection
// package's root_cert.
func testCAPEM(t *testing.T) []byte {
	t.Helper()
	ca, err := identity.NewCA("Org1", identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.CertDER()})
}

// TestExternalOrgAddress: a connection package's address for an org is
// what that org's peers dial; other orgs dial its address; a bad org
// address is refused with the package.
func TestExternalOrgAddress(t *testing.T) {
	ca := string(testCAPEM(t))
	pkg, err := (&external.Package{Address: "127.0.0.1:1", RootCert: ca, OrgAddresses: map[string]string{"Org2": "127.0.0.2:2"}}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	for org, want := range map[string]string{"Org1": "127.0.0.1:1", "Org2": "127.0.0.2:2", "": "127.0.0.1:1"} {
		r, err := external.New(external.Options{Org: org})
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.Contract("cc", pkg)
		if err != nil {
			t.Fatal(err)
		}
		if c.Address() != want || c.Hash() != external.Hash(pkg) {
			t.Errorf("org %q dials %s (package %s), want %s under the package's hash", org, c.Address(), c.Hash(), want)
		}
		r.Close()
	}
	if _, err := (&external.Package{Address: "127.0.0.1:1", RootCert: ca, OrgAddresses: map[string]string{"Org2": "nohost"}}).Encode(); !errors.Is(err, external.ErrPackage) || !strings.Contains(err.Error(), "org_addresses[Org2]") {
		t.Errorf("a bad org address: %v, want ErrPackage naming org_addresses[Org2]", err)
	}
}
