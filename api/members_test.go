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
	add := `{"channel":"c","sequence":2,"add":[{"id":"Org3","ca_certs":["AQ=="],"tls_ca_certs":["Ag=="]}],"remove":["Org2"]}`
	if _, u, err := DecodeMembersEnvelope(enc(add)); err != nil || len(u.Add) != 1 || u.Add[0].ID != "Org3" || string(u.Add[0].TLSCACerts[0]) != "\x02" ||
		len(u.Remove) != 1 || u.Remove[0] != "Org2" || len(u.CRLs) != 0 {
		t.Fatalf("add and remove: %v %+v", err, u)
	}
	withPeers := addPeers(`{"name":"peer0.Org3","address":"127.0.0.1:7051"},{"name":"peer1.Org3","address":"[::1]:7052"}`)
	if _, u, err := DecodeMembersEnvelope(enc(withPeers)); err != nil || len(u.Add[0].Peers) != 2 || u.Add[0].Peers[1] != (MembersPeer{Name: "peer1.Org3", Address: "[::1]:7052"}) {
		t.Fatalf("an added org with peers: %v %+v", err, u)
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
		{"add without CA", `{"channel":"c","sequence":0,"add":[{"id":"Org3","tls_ca_certs":["AQ=="]}]}`, "has 0 ca_certs"},
		{"add without TLS CA", `{"channel":"c","sequence":0,"add":[{"id":"Org3","ca_certs":["AQ=="]}]}`, "has 0 tls_ca_certs"},
		{"add empty CA", `{"channel":"c","sequence":0,"add":[{"id":"Org3","ca_certs":[""],"tls_ca_certs":["AQ=="]}]}`, "ca_certs[0] is empty"},
		{"bad org id", `{"channel":"c","sequence":0,"remove":["Org/2"]}`, "is not a letter"},
		{"empty org id", `{"channel":"c","sequence":0,"remove":[""]}`, "want 1 to 64"},
		{"add and remove", `{"channel":"c","sequence":0,"add":[{"id":"O","ca_certs":["AQ=="],"tls_ca_certs":["AQ=="]}],"remove":["O"]}`, "added or removed twice"},
		{"remove twice", `{"channel":"c","sequence":0,"remove":["O","O"]}`, "added or removed twice"},
		{"peer without name", addPeers(`{"address":"127.0.0.1:7051"}`), `name ""`},
		{"peer name with space", addPeers(`{"name":"peer 0","address":"127.0.0.1:7051"}`), "without spaces"},
		{"peer without port", addPeers(`{"name":"p0","address":"127.0.0.1"}`), "want HOST:PORT"},
		{"peer without host", addPeers(`{"name":"p0","address":":7051"}`), "no host"},
		{"peer port not a number", addPeers(`{"name":"p0","address":"h:x"}`), `port "x"`},
		{"peer port zero", addPeers(`{"name":"p0","address":"h:0"}`), `port "0"`},
		{"peer twice", addPeers(`{"name":"p0","address":"h:1"},{"name":"p0","address":"h:2"}`), "given twice"},
		{"address twice", addPeers(`{"name":"p0","address":"h:1"},{"name":"p1","address":"h:1"}`), "given twice"},
		{"too many peers", addPeers(strings.Repeat(`{"name":"p","address":"h:1"},`, MaxOrgPeers) + `{"name":"p","address":"h:1"}`), "at most 16"},
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
	b, _ = EncodeMembers(&ConfigEnvelope{Update: []byte(`{"channel":"c","sequence":1,"add":[{"id":"Org3","ca_certs":["AQ=="],"tls_ca_certs":["AQ=="]}],"remove":["Org2"]}`)})
	f.Add(b)
	b, _ = EncodeMembers(&ConfigEnvelope{Update: []byte(addPeers(`{"name":"peer0.Org3","address":"127.0.0.1:7051"}`))})
	f.Add(b)
	f.Add([]byte(MembersMagic))
	f.Add([]byte(MembersMagic + `{"update":"e30=","signatures":[{"signer":null,"signature":"AQ=="}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		env, u, err := DecodeMembersEnvelope(raw)
		if err != nil {
			return
		}
		if u.Channel == "" || len(u.CRLs)+len(u.Add)+len(u.Remove) == 0 || len(u.CRLs) > MaxMembersCRLs ||
			len(u.Add)+len(u.Remove) > MaxMembersOrgs || env.ID() == "" {
			t.Fatalf("decoded update breaks its form: %+v", u)
		}
		named := map[string]bool{}
		for _, id := range u.Remove {
			if ValidOrgID(id) != nil || named[id] {
				t.Fatalf("removed org %q invalid or repeated: %+v", id, u)
			}
			named[id] = true
		}
		for _, o := range u.Add {
			if ValidOrgID(o.ID) != nil || named[o.ID] || len(o.CACerts) == 0 || len(o.TLSCACerts) == 0 || len(o.Peers) > MaxOrgPeers {
				t.Fatalf("added org %q breaks its form: %+v", o.ID, u)
			}
			named[o.ID] = true
		}
	})
}

// addPeers is an update that adds Org3 with the peers of the JSON list
// items peers.
func addPeers(peers string) string {
	return `{"channel":"c","sequence":0,"add":[{"id":"Org3","ca_certs":["AQ=="],"tls_ca_certs":["AQ=="],"peers":[` + peers + `]}]}`
}
