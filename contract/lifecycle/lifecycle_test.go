package lifecycle

import (
	"errors"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/policy"
)

func def(name string, seq uint64) *Definition {
	return &Definition{Channel: "ch", Name: name, Version: "1.0", Sequence: seq, Runtime: RuntimeBuiltin, Policy: "or('Org1.peer', 'Org2.peer')"}
}

func isOrg(o string) bool { return o == "Org1" || o == "Org2" }

// TestDefinitionCheck: every malformed field is refused by name, with
// the error that says what is allowed.
func TestDefinitionCheck(t *testing.T) {
	hash := CodeHash([]byte("m"))
	for _, c := range []struct {
		name string
		f    func(*Definition)
		want error
		msg  string
	}{
		{"ok", func(*Definition) {}, nil, ""},
		{"no channel", func(d *Definition) { d.Channel = "" }, ErrMalformed, "no channel"},
		{"reserved name", func(d *Definition) { d.Name = "_lifecycle" }, ErrMalformed, "reserved"},
		{"empty name", func(d *Definition) { d.Name = "" }, ErrMalformed, "namespace"},
		{"no version", func(d *Definition) { d.Version = "" }, ErrMalformed, "version"},
		{"sequence 0", func(d *Definition) { d.Sequence = 0 }, ErrSequence, "sequence 0"},
		{"unknown runtime", func(d *Definition) { d.Runtime = "docker" }, ErrRuntime, `runtime "docker", want builtin, wasm or external`},
		{"external without hash", func(d *Definition) { d.Runtime = RuntimeExternal }, ErrMalformed, "SHA-256 of its connection package"},
		{"external", func(d *Definition) { d.Runtime, d.CodeHash = RuntimeExternal, hash }, nil, ""},
		{"builtin with hash", func(d *Definition) { d.CodeHash = hash }, ErrMalformed, "leave the hash empty"},
		{"wasm without hash", func(d *Definition) { d.Runtime = RuntimeWasm }, ErrMalformed, "64 lowercase hex"},
		{"wasm", func(d *Definition) { d.Runtime, d.CodeHash = RuntimeWasm, hash }, nil, ""},
		{"bad policy", func(d *Definition) { d.Policy = "AND(" }, ErrPolicy, "position"},
		{"init", func(d *Definition) { d.Init = "init\n" }, ErrMalformed, "init"},
		{"wasm fuel", func(d *Definition) { d.Runtime, d.CodeHash, d.Fuel = RuntimeWasm, hash, 5000 }, nil, ""},
		{"negative fuel", func(d *Definition) { d.Runtime, d.CodeHash, d.Fuel = RuntimeWasm, hash, -1 }, ErrMalformed, "fuel -1, want 1 to 2^62"},
		{"fuel past 2^62", func(d *Definition) { d.Runtime, d.CodeHash, d.Fuel = RuntimeWasm, hash, MaxFuel+1 }, ErrMalformed, "want 1 to 2^62"},
		{"builtin fuel", func(d *Definition) { d.Fuel = 5000 }, ErrMalformed, "only a wasm contract is metered"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := def("cc", 1)
			c.f(d)
			raw, err := d.Encode()
			if !errors.Is(err, c.want) || err != nil && !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Encode: %v, want %v containing %q", err, c.want, c.msg)
			}
			if err != nil {
				return
			}
			got, err := Decode(raw)
			if err != nil || got.Name != d.Name || got.Fuel != d.Fuel || got.Policy != "OR('Org1.peer','Org2.peer')" || got.Parsed == nil {
				t.Fatalf("Decode(Encode) = %+v, %v", got, err)
			}
		})
	}
	for _, raw := range []string{`{`, `{"name":"cc","extra":1}`, `{"channel":"ch","name":"cc","version":"1","sequence":1,"runtime":"builtin","policy":"OR('Org1.peer', 'Org2.peer')"}`,
		`{"channel":"ch","name":"cc","version":"1","sequence":1,"runtime":"builtin","policy":"OR('Org1.peer')"} {}`} {
		if _, err := Decode([]byte(raw)); !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrPolicy) {
			t.Errorf("Decode(%s) = %v, want a malformed or policy error", raw, err)
		}
	}
}

// TestCheckWrites: only the exact write set of one definition passes.
func TestCheckWrites(t *testing.T) {
	code := []byte("\x00asm module")
	wasm := def("cc", 1)
	wasm.Runtime, wasm.CodeHash = RuntimeWasm, CodeHash(code)
	if _, err := wasm.Encode(); err != nil {
		t.Fatal(err)
	}
	ext := def("cc", 1)
	ext.Runtime, ext.CodeHash = RuntimeExternal, CodeHash(code)
	if _, err := ext.Encode(); err != nil {
		t.Fatal(err)
	}
	builtin := def("cc", 2)
	if _, err := builtin.Encode(); err != nil {
		t.Fatal(err)
	}
	foreign := def("cc", 1)
	foreign.Policy = "OR('Org9.peer')"
	if _, err := foreign.Encode(); err != nil {
		t.Fatal(err)
	}
	other := def("cc", 1)
	other.Channel = "other"
	if _, err := other.Encode(); err != nil {
		t.Fatal(err)
	}
	edit := func(rw *api.RWSet, f func(ns *api.NsRWSet)) *api.RWSet { f(rw.Namespaces[0]); return rw }
	for _, c := range []struct {
		name string
		rw   *api.RWSet
		want error
	}{
		{"wasm", Writes(wasm, code), nil},
		{"builtin", Writes(builtin, nil), nil},
		{"wasm without code", Writes(wasm, nil), ErrCodeHash},
		{"external", Writes(ext, code), nil},
		{"external without package", edit(Writes(ext, code), func(ns *api.NsRWSet) { ns.Writes = ns.Writes[:1] }), ErrMalformed},
		{"external package of another hash", edit(Writes(ext, code), func(ns *api.NsRWSet) { ns.Writes[1].Value = []byte("x") }), ErrCodeHash},
		{"code of another hash", edit(Writes(wasm, code), func(ns *api.NsRWSet) { ns.Writes[1].Value = []byte("x") }), ErrCodeHash},
		{"code under another key", edit(Writes(wasm, code), func(ns *api.NsRWSet) { ns.Writes[1].Key = "code/x" }), ErrCodeHash},
		{"builtin with code", edit(Writes(builtin, nil), func(ns *api.NsRWSet) {
			ns.Writes = append(ns.Writes, &api.KVWrite{Key: "code/x", Value: code})
		}), ErrMalformed},
		{"extra key", edit(Writes(builtin, nil), func(ns *api.NsRWSet) { ns.Writes = append(ns.Writes, &api.KVWrite{Key: "def/cc2"}) }), ErrMalformed},
		{"a read", edit(Writes(builtin, nil), func(ns *api.NsRWSet) { ns.Reads = []*api.KVRead{{Key: "def/cc"}} }), ErrMalformed},
		{"a delete", edit(Writes(builtin, nil), func(ns *api.NsRWSet) { ns.Writes[0].IsDelete = true }), ErrMalformed},
		{"wrong key", edit(Writes(builtin, nil), func(ns *api.NsRWSet) { ns.Writes[0].Key = "def/cc2" }), ErrMalformed},
		{"other namespace", edit(Writes(builtin, nil), func(ns *api.NsRWSet) { ns.Namespace = "cc" }), ErrMalformed},
		{"nothing", &api.RWSet{Namespaces: []*api.NsRWSet{{Namespace: Namespace}}}, ErrMalformed},
		{"foreign org", Writes(foreign, nil), ErrPolicy},
		{"other channel", Writes(other, nil), ErrMalformed},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := CheckWrites("ch", isOrg, c.rw)
			if !errors.Is(err, c.want) {
				t.Errorf("CheckWrites: %v, want %v", err, c.want)
			}
		})
	}
}

// TestTableNext: sequences rise by exactly one per contract.
func TestTableNext(t *testing.T) {
	tbl := NewTable(map[string]*policy.Policy{"kv": policy.MustParse("OR('Org1.peer')")}, nil)
	for _, c := range []struct {
		d    *Definition
		want string // "" for success
	}{
		{def("kv", 1), "a replay or a downgrade"},
		{def("kv", 3), "a sequence skipped"},
		{def("kv", 2), ""},
		{def("kv", 2), "is at sequence 2"},
		{def("new", 2), "must have sequence 1"},
		{def("new", 1), ""},
	} {
		if _, err := c.d.Encode(); err != nil {
			t.Fatal(err)
		}
		next, err := tbl.Next(c.d)
		if c.want == "" {
			if err != nil {
				t.Fatalf("Next(%s seq %d): %v", c.d.Name, c.d.Sequence, err)
			}
			if e, _ := tbl.Get(c.d.Name); e.Sequence == c.d.Sequence {
				t.Fatalf("Next changed the table it was called on")
			}
			tbl = next
			continue
		}
		if !errors.Is(err, ErrSequence) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("Next(%s seq %d) = %v, want ErrSequence with %q", c.d.Name, c.d.Sequence, err, c.want)
		}
	}
	if got := strings.Join(tbl.Names(), ","); got != "kv,new" {
		t.Errorf("Names = %s", got)
	}
}

func TestDefaultPolicy(t *testing.T) {
	for _, c := range []struct {
		orgs []string
		want string
	}{
		{[]string{"A"}, "OutOf(1,'A.admin')"},
		{[]string{"A", "B"}, "OutOf(2,'A.admin','B.admin')"},
		{[]string{"A", "B", "C"}, "OutOf(2,'A.admin','B.admin','C.admin')"},
	} {
		p, err := DefaultPolicy(c.orgs)
		if err != nil || !strings.EqualFold(p.String(), c.want) {
			t.Errorf("DefaultPolicy(%v) = %v, %v; want %s", c.orgs, p, err, c.want)
		}
	}
}

// FuzzDecode: the network-facing decoders never panic, and what decodes
// encodes back to the same bytes' meaning.
func FuzzDecode(f *testing.F) {
	d := def("cc", 1)
	raw, _ := d.Encode()
	f.Add(raw)
	f.Add([]byte(`{"channel":"ch"}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := Decode(raw)
		if err != nil {
			return
		}
		again, err := Decode(d.Raw)
		if err != nil || again.Name != d.Name || again.Sequence != d.Sequence || again.Policy != d.Policy {
			t.Fatalf("a decoded definition does not decode again: %v", err)
		}
		CheckWrites("ch", isOrg, Writes(d, raw))
	})
}
