package api

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeMembersEnvelope(t *testing.T) {
	enc := func(update string, sigs ...ConfigSignature) []byte {
		b, err := EncodeMembers(&ConfigEnvelope{Update: []byte(update), Signatures: sigs})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := `{"channel":"c","sequence":0,"crls":[{"org":"Org1","crl":"AQI="}]}`
	env, u, err := DecodeMembersEnvelope(enc(good))
	if err != nil || u.Channel != "c" || len(u.CRLs) != 1 || string(u.CRLs[0].CRL) != "\x01\x02" || string(env.Update) != good {
		t.Fatalf("good update: %v %+v", err, u)
	}
	if IsConfigEnvelope(enc(good)) || !IsMembersEnvelope(enc(good)) {
		t.Fatal("a membership envelope is taken for a config envelope")
	}
	for _, c := range []struct{ name, update, want string }{
		{"no channel", `{"sequence":0,"crls":[{"org":"Org1","crl":"AQI="}]}`, "names no channel"},
		{"no crl", `{"channel":"c","sequence":0,"crls":[]}`, "carries no CRL"},
		{"empty crl", `{"channel":"c","sequence":0,"crls":[{"org":"Org1"}]}`, "want both"},
		{"repeated org", `{"channel":"c","sequence":0,"crls":[{"org":"O","crl":"AQ=="},{"org":"O","crl":"AQ=="}]}`, "repeats org"},
		{"unknown field", `{"channel":"c","sequence":0,"orderers":[],"crls":[{"org":"O","crl":"AQ=="}]}`, "unknown field"},
	} {
		_, _, err := DecodeMembersEnvelope(enc(c.update))
		if !errors.Is(err, ErrBadConfigUpdate) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadConfigUpdate naming %q", c.name, err, c.want)
		}
	}
	if _, _, err := DecodeMembersEnvelope(enc(good, ConfigSignature{})); !errors.Is(err, ErrBadConfigUpdate) {
		t.Errorf("an empty signature: %v", err)
	}
	cfg, _ := (&ConfigEnvelope{Update: []byte(good)}).Encode()
	if _, _, err := DecodeMembersEnvelope(cfg); !errors.Is(err, ErrBadConfigUpdate) {
		t.Errorf("a config envelope decoded as a membership update: %v", err)
	}
}

func FuzzDecodeMembersEnvelope(f *testing.F) {
	b, _ := EncodeMembers(&ConfigEnvelope{Update: []byte(`{"channel":"c","sequence":1,"crls":[{"org":"O","crl":"AQI="}]}`)})
	f.Add(b)
	f.Add([]byte(MembersMagic))
	f.Add([]byte(MembersMagic + `{"update":"e30=","signatures":[{"signer":null,"signature":"AQ=="}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		env, u, err := DecodeMembersEnvelope(raw)
		if err != nil {
			return
		}
		if u.Channel == "" || len(u.CRLs) == 0 || len(u.CRLs) > MaxMembersCRLs || env.ID() == "" {
			t.Fatalf("decoded update breaks its form: %+v", u)
		}
	})
}
