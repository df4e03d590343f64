package api

import (
	"errors"
	"strings"
	"testing"
)

func TestConfigEnvelopeRoundTrip(t *testing.T) {
	u := &ConfigUpdate{Channel: "ch", Sequence: 2, Orderers: []ConfigOrderer{{ID: 1, Org: "O", Name: "o1", Address: "h:1"}, {ID: 4, Org: "O", Name: "o4", Address: "h:4"}}}
	raw, err := EncodeConfigUpdate(u)
	if err != nil {
		t.Fatal(err)
	}
	env := &ConfigEnvelope{Update: raw, Signatures: []ConfigSignature{{Signer: &Identity{Org: "O", Cert: []byte("c")}, Signature: []byte("s")}}}
	b, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !IsConfigEnvelope(b) {
		t.Fatal("an encoded envelope is not recognised")
	}
	genv, gu, err := DecodeConfigEnvelope(b)
	if err != nil || gu.Sequence != 2 || len(gu.Orderers) != 2 || string(genv.Update) != string(raw) || genv.ID() != env.ID() {
		t.Fatalf("round trip: %+v %+v %v", genv, gu, err)
	}
}

// TestConfigEnvelopeRefusesBadInput: every malformed envelope is an
// ErrBadConfigUpdate naming the problem, never a panic.
func TestConfigEnvelopeRefusesBadInput(t *testing.T) {
	env := func(update string) []byte {
		b, _ := (&ConfigEnvelope{Update: []byte(update)}).Encode()
		return b
	}
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"no magic", []byte(`{"update":""}`), "does not start with"},
		{"not JSON", []byte(ConfigMagic + "{"), "envelope"},
		{"unknown field", []byte(ConfigMagic + `{"update":"","x":1}`), "unknown field"},
		{"update not JSON", env("nope"), "update"},
		{"no channel", env(`{"sequence":0,"orderers":[{"id":1,"org":"O","name":"o","address":"a"}]}`), "no channel"},
		{"no orderer", env(`{"channel":"c","sequence":0,"orderers":[]}`), "no orderer"},
		{"id 0", env(`{"channel":"c","orderers":[{"id":0,"org":"O","name":"o","address":"a"}]}`), "id 0"},
		{"repeated id", env(`{"channel":"c","orderers":[{"id":1,"org":"O","name":"o","address":"a"},{"id":1,"org":"O","name":"p","address":"a"}]}`), "repeats id"},
		{"repeated name", env(`{"channel":"c","orderers":[{"id":1,"org":"O","name":"o","address":"a"},{"id":2,"org":"O","name":"o","address":"a"}]}`), "repeats orderer"},
		{"no address", env(`{"channel":"c","orderers":[{"id":1,"org":"O","name":"o"}]}`), "want all three"},
		{"too big", append([]byte(ConfigMagic), make([]byte, MaxConfigEnvelope)...), "at most"},
	} {
		_, _, err := DecodeConfigEnvelope(c.raw)
		if !errors.Is(err, ErrBadConfigUpdate) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadConfigUpdate naming %q", c.name, err, c.want)
		}
	}
}

func FuzzDecodeConfigEnvelope(f *testing.F) {
	b, _ := (&ConfigEnvelope{Update: []byte(`{"channel":"c","sequence":1,"orderers":[{"id":1,"org":"O","name":"o","address":"a"}]}`)}).Encode()
	f.Add(b)
	f.Add([]byte(ConfigMagic))
	f.Fuzz(func(t *testing.T, raw []byte) {
		DecodeConfigEnvelope(raw)
	})
}
