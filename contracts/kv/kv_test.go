package kv

import (
	"strings"
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
		key    string // checked afterwards, when set
		value  string // its value; "" means absent
	}{
		{name: "read", fn: "read", args: []string{"user1"}, out: "v1"},
		{name: "read missing", fn: "read", args: []string{"user9"}, status: 404, errHas: `key "user9" does not exist`},
		{name: "read empty key", fn: "read", args: []string{""}, status: 400, errHas: `key "" is 0 bytes: want 1 to 1024`},
		{name: "update", fn: "update", args: []string{"user1", "new"}, key: "user1", value: "new"},
		{name: "update missing", fn: "update", args: []string{"user9", "x"}, status: 404},
		{name: "insert", fn: "insert", args: []string{"user9", "v9"}, key: "user9", value: "v9"},
		{name: "insert exists", fn: "insert", args: []string{"user2", "x"}, status: 409, errHas: `key "user2" already exists`},
		{name: "insert long key", fn: "insert", args: []string{strings.Repeat("k", 1025), "x"}, status: 400, errHas: "1025 bytes"},
		{name: "scan", fn: "scan", args: []string{"user2", "2"}, out: `[{"key":"user2","value":"v2"},{"key":"user3","value":"v3"}]`},
		{name: "scan past end", fn: "scan", args: []string{"user3", "10"}, out: `[{"key":"user3","value":"v3"}]`},
		{name: "scan none", fn: "scan", args: []string{"zzz", "10"}, out: `[]`},
		{name: "scan zero", fn: "scan", args: []string{"user1", "0"}, status: 400, errHas: "scan count 0: want 1 to 1000"},
		{name: "scan count text", fn: "scan", args: []string{"user1", "ten"}, status: 400, errHas: `argument 2 (count) of scan: "ten" is not an int`},
		{name: "rmw", fn: "read_modify_write", args: []string{"user3", "w"}, key: "user3", value: "w"},
		{name: "rmw camel", fn: "readModifyWrite", args: []string{"user3", "w"}, key: "user3", value: "w"},
		{name: "rmw missing", fn: "read_modify_write", args: []string{"user9", "w"}, status: 404},
		{name: "delete", fn: "delete", args: []string{"user1"}, key: "user1", value: ""},
		{name: "delete missing", fn: "delete", args: []string{"user9"}, status: 404},
		{name: "load", fn: "load", args: []string{`[{"key":"user1","value":"n1"},{"key":"user7","value":"n7"}]`}, key: "user7", value: "n7"},
		{name: "load none", fn: "load", args: []string{`[]`}, status: 400, errHas: "load of 0 records: want 1 to 1000"},
		{name: "args", fn: "update", args: []string{"user1"}, status: 400, errHas: "update takes 2 arguments (key string, value []byte), got 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := memstub.New()
			for _, k := range []string{"user1", "user2", "user3"} {
				s.Set(k, []byte("v"+k[4:]))
			}
			out, err := s.Call(c, tc.fn, tc.args...)
			if tc.status != 0 {
				memstub.WantError(t, tc.fn, err, tc.status, tc.errHas)
				return
			}
			if err != nil || string(out) != tc.out {
				t.Fatalf("%s = %q, %v; want %q", tc.fn, out, err, tc.out)
			}
			if tc.key != "" {
				if got := s.Get(tc.key); string(got) != tc.value || (tc.value == "" && got != nil) {
					t.Fatalf("%s = %q, want %q", tc.key, got, tc.value)
				}
			}
			if tc.fn == "read_modify_write" && (len(s.Reads()) != 1 || len(s.Writes()) != 1) {
				t.Fatalf("read_modify_write read %q and wrote %q: want one key each", s.Reads(), s.Writes())
			}
		})
	}
}
