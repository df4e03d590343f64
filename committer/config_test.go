package committer

import (
	"strings"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract/lifecycle"
)

// TestVerifyConfig: a config transaction (channel config update) is VALID
// under its envelope's id when admins of a majority of the channel's orgs
// signed it, and reads and writes nothing; otherwise it gets a code that
// names the problem.
func TestVerifyConfig(t *testing.T) {
	n := newTestNet(t)
	envelope := func(channel string, signers ...api.Signer) []byte {
		u, _ := api.EncodeConfigUpdate(&api.ConfigUpdate{Channel: channel, Sequence: 0,
			Orderers: []api.ConfigOrderer{{ID: 1, Org: "OrdererOrg", Name: "o1", Address: "127.0.0.1:1"}}})
		env, err := api.SignConfigUpdate(u, signers...)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := env.Encode()
		return raw
	}
	ok := envelope(testChannel, n.ordererAdmin, n.org1Admin)
	r := verifyTx(&n.ch, n.ch.newRuleSet(0, lifecycle.NewTable(nil, nil), nil), ok)
	env, _, _ := api.DecodeConfigEnvelope(ok)
	if r.code != api.TxValidationCode_VALID || r.err != nil || r.tx.ID() != env.ID() || len(r.tx.RWSet().GetNamespaces()) != 0 {
		t.Fatalf("signed by 2 of 3 orgs' admins: %v %v, id %q (want %q)", r.code, r.err, r.tx.ID(), env.ID())
	}
	for _, c := range []struct {
		name string
		raw  []byte
		code api.TxValidationCode
		want string
	}{
		{"one org of three", envelope(testChannel, n.ordererAdmin), api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, "1 of the channel's 3 orgs"},
		{"a client does not count", envelope(testChannel, n.ordererAdmin, n.client1), api.TxValidationCode_ENDORSEMENT_POLICY_FAILURE, "role client, want admin"},
		{"another channel", envelope("other", n.ordererAdmin), api.TxValidationCode_TARGET_CHAIN_NOT_FOUND, "is for channel"},
		{"malformed", []byte(api.ConfigMagic + "{"), api.TxValidationCode_BAD_PAYLOAD, "config transaction"},
	} {
		r := verifyTx(&n.ch, n.ch.newRuleSet(0, lifecycle.NewTable(nil, nil), nil), c.raw)
		if r.code != c.code || r.err == nil || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("%s: %v %v, want %v naming %q", c.name, r.code, r.err, c.code, c.want)
		}
	}
}
