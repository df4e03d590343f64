package gateway

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
)

// TestDifference: a disagreement names what differs, so a nondeterministic
// contract is told from peers at different heights.
func TestDifference(t *testing.T) {
	payload := func(result string, readBlock uint64, write string) []byte {
		b, err := proto.Marshal(&api.ResponsePayload{TxId: "t", Status: 200, Result: []byte(result), Rwset: &api.RWSet{Namespaces: []*api.NsRWSet{{
			Namespace: "kv",
			Reads:     []*api.KVRead{{Key: "a", Version: &api.Version{Block: readBlock}}},
			Writes:    []*api.KVWrite{{Key: "b", Value: []byte(write)}},
		}}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		a, b []byte
		has  string
	}{
		{"result", payload("1", 1, "x"), payload("2", 1, "x"), `the results differ ("1" and "2"): a nondeterministic contract`},
		{"read", payload("1", 1, "x"), payload("1", 2, "x"), `in namespace "kv" the reads differ at key "a"`},
		{"write", payload("1", 1, "x"), payload("1", 1, "y"), `the writes differ at key "b" after equal reads: a nondeterministic contract`},
		{"garbage", payload("1", 1, "x"), []byte{0xff}, "does not decode"},
	} {
		if got := difference(tc.a, tc.b); !strings.Contains(got, tc.has) {
			t.Errorf("%s: difference = %q, want it to contain %q", tc.name, got, tc.has)
		}
	}
}
