package fixedasset

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contracts/internal/memstub"
)

// setup holds assets client0_100_0 .. client0_100_4 of 100 bytes.
func setup(t *testing.T, c contract.Contract) *memstub.Stub {
	t.Helper()
	s := memstub.New()
	var specs []Spec
	for i := range 5 {
		specs = append(specs, Spec{UUID: fmt.Sprintf("client0_100_%d", i), ByteSize: 100, Content: "c"})
	}
	b, _ := json.Marshal(specs)
	if _, err := s.Call(c, "create_assets_from_batch", string(b)); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCreateAssetSize(t *testing.T) {
	c := New()
	s := memstub.New()
	for _, tc := range []struct {
		size    int
		content string
		want    int // JSON length
	}{
		{0, "", 0}, {100, "hello", 100}, {1000, `<"quoted">`, 1000}, {64000, "", 64000}, {10, "too long for ten", 0},
	} {
		uuid := fmt.Sprintf("u%d", tc.size)
		if _, err := s.Call(c, "create_asset", uuid, fmt.Sprint(tc.size), tc.content); err != nil {
			t.Fatal(err)
		}
		v := s.Get(uuid)
		var a Asset
		if err := json.Unmarshal(v, &a); err != nil {
			t.Fatal(err)
		}
		if tc.want != 0 && len(v) != tc.want {
			t.Errorf("asset of byteSize %d is %d bytes", tc.size, len(v))
		}
		if a.DocType != DocType || a.UUID != uuid || a.Creator != "user1" || a.ByteSize != tc.size ||
			!strings.HasPrefix(a.Content, tc.content) || strings.Trim(a.Content[len(tc.content):], "x") != "" {
			t.Errorf("asset %s = %+v", uuid, a)
		}
	}
	if r := s.Reads(); len(r) != 0 {
		t.Errorf("create_asset read %q: want a blind write", r)
	}
}

func TestFunctions(t *testing.T) {
	c := New()
	tooMany := `["` + strings.Repeat(`a","`, 50) + `a"]`
	for _, tc := range []struct {
		name   string
		fn     string
		args   []string
		status int
		errHas string
		check  func(t *testing.T, s *memstub.Stub, out []byte)
	}{
		{name: "empty", fn: "empty_contract", check: func(t *testing.T, s *memstub.Stub, out []byte) {
			if out != nil || len(s.Writes())+len(s.Reads()) != 0 {
				t.Errorf("empty_contract = %q, touched %q %q", out, s.Reads(), s.Writes())
			}
		}},
		{name: "empty camel", fn: "emptyContract"},
		{name: "create bad size", fn: "create_asset", args: []string{"u", "-1", ""}, status: 400, errHas: `byteSize -1 of asset "u": want 0 to 1048576`},
		{name: "create empty uuid", fn: "create_asset", args: []string{"", "10", ""}, status: 400, errHas: `uuid "" is 0 bytes`},
		{name: "get", fn: "get_asset", args: []string{"client0_100_1"}, check: func(t *testing.T, s *memstub.Stub, out []byte) {
			var a Asset
			if err := json.Unmarshal(out, &a); err != nil || a.UUID != "client0_100_1" || len(out) != 100 {
				t.Errorf("get_asset = %s (%v)", out, err)
			}
		}},
		{name: "get missing", fn: "get_asset", args: []string{"nope"}, status: 404, errHas: `asset "nope" does not exist`},
		{name: "delete", fn: "delete_asset", args: []string{"client0_100_1"}, check: func(t *testing.T, s *memstub.Stub, out []byte) {
			if s.Get("client0_100_1") != nil {
				t.Error("asset still there")
			}
		}},
		{name: "delete missing", fn: "delete_asset", args: []string{"nope"}, status: 404},
		{name: "batch empty", fn: "create_assets_from_batch", args: []string{`[]`}, status: 400, errHas: "assets holds 0 entries: want 1 to 50"},
		{name: "batch dup", fn: "create_assets_from_batch", args: []string{`[{"uuid":"a"},{"uuid":"a"}]`}, status: 400, errHas: `uuid "a" appears twice`},
		{name: "batch not json", fn: "create_assets_from_batch", args: []string{`[{`}, status: 400, errHas: "argument 1 (assets) of create_assets_from_batch"},
		{name: "get batch", fn: "get_assets_from_batch", args: []string{`["client0_100_3","client0_100_0"]`}, check: func(t *testing.T, s *memstub.Stub, out []byte) {
			var as []Asset
			if err := json.Unmarshal(out, &as); err != nil || len(as) != 2 || as[0].UUID != "client0_100_3" || as[1].UUID != "client0_100_0" {
				t.Errorf("get_assets_from_batch = %s (%v)", out, err)
			}
		}},
		{name: "get batch missing", fn: "get_assets_from_batch", args: []string{`["client0_100_3","nope"]`}, status: 404, errHas: `"nope"`},
		{name: "get batch too many", fn: "get_assets_from_batch", args: []string{tooMany}, status: 400, errHas: "uuids holds 51 entries: want 1 to 50"},
		{name: "read write", fn: "read_write_assets", args: []string{`{"read":["client0_100_2"],"write":[{"uuid":"n","byteSize":200,"content":"z"}]}`},
			check: func(t *testing.T, s *memstub.Stub, out []byte) {
				var as []Asset
				if err := json.Unmarshal(out, &as); err != nil || len(as) != 1 || as[0].UUID != "client0_100_2" || len(s.Get("n")) != 200 {
					t.Errorf("read_write_assets = %s (%v), n = %s", out, err, s.Get("n"))
				}
			}},
		{name: "write only", fn: "read_write_assets", args: []string{`{"write":[{"uuid":"n"}]}`}, check: func(t *testing.T, s *memstub.Stub, out []byte) {
			if string(out) != "[]" || s.Get("n") == nil {
				t.Errorf("read_write_assets = %s", out)
			}
		}},
		{name: "read write empty", fn: "read_write_assets", args: []string{`{}`}, status: 400, errHas: "read and write are both empty"},
		{name: "read write missing", fn: "read_write_assets", args: []string{`{"read":["nope"],"write":[{"uuid":"n"}]}`}, status: 404},
		{name: "page", fn: "paginated_range_query", args: []string{"client0_100_", "client0_100_~", "2", ""}, check: func(t *testing.T, s *memstub.Stub, out []byte) {
			var p struct {
				Assets   []Asset
				Bookmark string
			}
			if err := json.Unmarshal(out, &p); err != nil || len(p.Assets) != 2 || p.Assets[1].UUID != "client0_100_1" || p.Bookmark != "client0_100_2" {
				t.Errorf("page = %s (%v)", out, err)
			}
		}},
		{name: "last page", fn: "paginatedRangeQuery", args: []string{"client0_100_", "", "10", "client0_100_4"}, check: func(t *testing.T, s *memstub.Stub, out []byte) {
			if want := `"bookmark":""}`; !strings.HasSuffix(string(out), want) || strings.Count(string(out), `"uuid"`) != 1 {
				t.Errorf("page = %s", out)
			}
		}},
		{name: "page size", fn: "paginated_range_query", args: []string{"a", "b", "0", ""}, status: 400, errHas: "pageSize 0: want 1 to 1000"},
		{name: "page range", fn: "paginated_range_query", args: []string{"b", "a", "5", ""}, status: 400, errHas: `range ["b", "a") is empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := setup(t, c)
			out, err := s.Call(c, tc.fn, tc.args...)
			if tc.status != 0 {
				memstub.WantError(t, tc.fn, err, tc.status, tc.errHas)
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.fn, err)
			}
			if tc.check != nil {
				tc.check(t, s, out)
			}
		})
	}
}
