package simple

import (
	"testing"

	"github.com/strand-ledger/strand/contracts/internal/memstub"
)

func TestFunctions(t *testing.T) {
	c := New()
	for _, tc := range []struct {
		name   string
		fn     string
		args   []string
		status int
		errHas string
		out    string
		state  map[string]string // "" means absent
	}{
		{name: "open", fn: "open", args: []string{"carol", "10000"}, state: map[string]string{"carol": "10000"}},
		{name: "open exists", fn: "open", args: []string{"alice", "1"}, status: 409, errHas: `account "alice" already exists`},
		{name: "open negative", fn: "open", args: []string{"carol", "-1"}, status: 400, errHas: `money -1 for account "carol": want 0 or more`},
		{name: "open empty", fn: "open", args: []string{"", "1"}, status: 400, errHas: "acct of 0 bytes: want 1 to 256"},
		{name: "query", fn: "query", args: []string{"alice"}, out: "100"},
		{name: "query missing", fn: "query", args: []string{"zed"}, status: 404, errHas: `account "zed" does not exist`},
		{name: "delete", fn: "delete", args: []string{"bob"}, state: map[string]string{"bob": ""}},
		{name: "delete missing", fn: "delete", args: []string{"zed"}, status: 404},
		{name: "transfer", fn: "transfer", args: []string{"alice", "bob", "100"}, state: map[string]string{"alice": "0", "bob": "150"}},
		{name: "transfer insufficient", fn: "transfer", args: []string{"alice", "bob", "101"}, status: 400, errHas: `account "alice" holds 100: cannot transfer 101`},
		{name: "transfer same", fn: "transfer", args: []string{"alice", "alice", "1"}, status: 400, errHas: "both account"},
		{name: "transfer zero", fn: "transfer", args: []string{"alice", "bob", "0"}, status: 400, errHas: "amount 0: want 1 or more"},
		{name: "transfer missing src", fn: "transfer", args: []string{"zed", "bob", "1"}, status: 404, errHas: `"zed"`},
		{name: "transfer missing dst", fn: "transfer", args: []string{"alice", "zed", "1"}, status: 404, errHas: `"zed"`},
		{name: "transfer overflow", fn: "transfer", args: []string{"alice", "rich", "1"}, status: 400, errHas: "overflows int64"},
		{name: "transfer bad amount", fn: "transfer", args: []string{"alice", "bob", "1.5"}, status: 400, errHas: `argument 3 (amount) of transfer: "1.5" is not an int64`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memstub.New()
			s.Set("alice", []byte("100"))
			s.Set("bob", []byte("50"))
			s.Set("rich", []byte("9223372036854775807"))
			out, err := s.Call(c, tc.fn, tc.args...)
			if tc.status != 0 {
				memstub.WantError(t, tc.fn, err, tc.status, tc.errHas)
				return
			}
			if err != nil || string(out) != tc.out {
				t.Fatalf("%s = %q, %v; want %q", tc.fn, out, err, tc.out)
			}
			for k, want := range tc.state {
				if got := s.Get(k); string(got) != want || (want == "" && got != nil) {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}
