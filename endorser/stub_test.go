package endorser

import (
	"strings"
	"testing"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
)

// nsSet returns the single namespace of rp's read/write set.
func nsSet(t *testing.T, rp *api.ResponsePayload) *api.NsRWSet {
	t.Helper()
	if rp.Rwset == nil {
		t.Fatal("response has no read/write set")
	}
	if n := len(rp.Rwset.Namespaces); n != 1 {
		t.Fatalf("%d namespaces, want 1", n)
	}
	ns := rp.Rwset.Namespaces[0]
	if ns.Namespace != testNS {
		t.Fatalf("namespace %q, want %q", ns.Namespace, testNS)
	}
	return ns
}

func TestRWSet(t *testing.T) {
	f := newFixture(t)
	f.commit(t, "a=1", "b=2", "c=3") // block 0
	f.commit(t, "b=22")              // block 1

	tests := []struct {
		name                  string
		script                []string
		result, reads, writes string
	}{
		{
			name:   "reads record committed versions, absent keys nil, sorted, once",
			script: []string{"get", "c", "get", "b", "get", "zz", "get", "b"},
			result: "c=3\nb=22\nzz=<nil>\nb=22",
			reads:  "b@1:0 c@0:2 zz@-",
		},
		{
			name:   "read-your-writes records no read",
			script: []string{"put", "n", "new", "get", "n", "del", "a", "get", "a"},
			result: "n=new\na=<nil>",
			writes: "-a n=new",
		},
		{
			name:   "first read wins over a later own write",
			script: []string{"get", "a", "put", "a", "x", "get", "a"},
			result: "a=1\na=x",
			reads:  "a@0:0",
			writes: "a=x",
		},
		{
			name:   "last write per key wins, writes sorted",
			script: []string{"put", "z", "1", "put", "m", "1", "put", "z", "2", "del", "m", "put", "a", "", "del", "q", "put", "q", "back"},
			writes: "a= -m q=back z=2",
		},
		{
			name:   "GetMultipleStates mixes own writes and committed reads",
			script: []string{"put", "x", "9", "mget", "a,x,nope,a"},
			result: "1,9,<nil>,1",
			reads:  "a@0:0 nope@-",
			writes: "x=9",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rp := f.endorse(t, "do", tc.script...)
			if string(rp.Result) != tc.result {
				t.Errorf("result %q, want %q", rp.Result, tc.result)
			}
			ns := nsSet(t, rp)
			if got := fmtReads(ns.Reads); got != tc.reads {
				t.Errorf("reads %q, want %q", got, tc.reads)
			}
			if got := fmtWrites(ns.Writes); got != tc.writes {
				t.Errorf("writes %q, want %q", got, tc.writes)
			}
			if len(ns.RangeReads) != 0 {
				t.Errorf("%d range reads, want none", len(ns.RangeReads))
			}
		})
	}
}

func TestRWSetEmptyAndEvent(t *testing.T) {
	f := newFixture(t)
	rp := f.endorse(t, "do", "event", "paid", "42")
	if rp.Rwset == nil || len(rp.Rwset.Namespaces) != 0 {
		t.Fatalf("rwset %v, want present and empty", rp.Rwset)
	}
	if rp.Event.GetName() != "paid" || string(rp.Event.GetPayload()) != "42" {
		t.Fatalf("event %v, want paid/42", rp.Event)
	}
	if rp.Contract != testNS || rp.Status != 200 {
		t.Fatalf("contract %q status %d", rp.Contract, rp.Status)
	}
}

func TestRangeReads(t *testing.T) {
	f := newFixture(t)
	f.commit(t, "a1=1", "a2=2", "a3=3", "a4=4", "a5=5", "b=out") // block 0: a_i at 0:i-1
	tests := []struct {
		name   string
		script []string
		result string
		ranges []string
	}{
		{
			name:   "whole range",
			script: []string{"range", "a", "b", "0", ""},
			result: "[a1=1 a2=2 a3=3 a4=4 a5=5] next=",
			ranges: []string{`["a","b") exhausted=true reads=a1@0:0 a2@0:1 a3@0:2 a4@0:3 a5@0:4`},
		},
		{
			name:   "first page stops at the bookmark key",
			script: []string{"range", "a", "b", "2", ""},
			result: "[a1=1 a2=2] next=a3",
			ranges: []string{`["a","b") exhausted=false reads=a1@0:0 a2@0:1 a3@0:2`},
		},
		{
			name:   "middle page starts at the bookmark",
			script: []string{"range", "a", "b", "2", "a3"},
			result: "[a3=3 a4=4] next=a5",
			ranges: []string{`["a3","b") exhausted=false reads=a3@0:2 a4@0:3 a5@0:4`},
		},
		{
			name:   "last page is exhausted",
			script: []string{"range", "a", "b", "2", "a5"},
			result: "[a5=5] next=",
			ranges: []string{`["a5","b") exhausted=true reads=a5@0:4`},
		},
		{
			name:   "a page that ends exactly at the end is exhausted",
			script: []string{"range", "a", "b", "5", ""},
			result: "[a1=1 a2=2 a3=3 a4=4 a5=5] next=",
			ranges: []string{`["a","b") exhausted=true reads=a1@0:0 a2@0:1 a3@0:2 a4@0:3 a5@0:4`},
		},
		{
			name:   "empty end runs to the end of the namespace",
			script: []string{"range", "a5", "", "0", ""},
			result: "[a5=5 b=out] next=",
			ranges: []string{`["a5","") exhausted=true reads=a5@0:4 b@0:5`},
		},
		{
			name:   "own writes merge in; own deletes hide committed keys but are still read",
			script: []string{"put", "a1", "new", "put", "a2x", "mine", "del", "a3", "put", "zz", "out", "range", "a", "b", "0", ""},
			result: "[a1=new a2=2 a2x=mine a4=4 a5=5] next=",
			ranges: []string{`["a","b") exhausted=true reads=a1@0:0 a2@0:1 a3@0:2 a4@0:3 a5@0:4`},
		},
		{
			name:   "a bookmark on an own write bounds the read exactly",
			script: []string{"put", "a2x", "mine", "range", "a", "b", "2", ""},
			result: "[a1=1 a2=2] next=a2x",
			ranges: []string{`["a","a2x") exhausted=true reads=a1@0:0 a2@0:1`},
		},
		{
			name:   "a page of own writes only",
			script: []string{"put", "a0", "x", "put", "a0y", "y", "range", "a", "b", "1", ""},
			result: "[a0=x] next=a0y",
			ranges: []string{`["a","a0y") exhausted=true reads=`},
		},
		{
			name:   "two range reads kept in call order",
			script: []string{"range", "a4", "b", "0", "", "range", "a1", "a2", "0", ""},
			result: "[a4=4 a5=5] next=\n[a1=1] next=",
			ranges: []string{`["a4","b") exhausted=true reads=a4@0:3 a5@0:4`, `["a1","a2") exhausted=true reads=a1@0:0`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rp := f.endorse(t, "do", tc.script...)
			if string(rp.Result) != tc.result {
				t.Errorf("result %q, want %q", rp.Result, tc.result)
			}
			ns := nsSet(t, rp)
			var got []string
			for _, rr := range ns.RangeReads {
				got = append(got, fmtRange(rr))
				if !rangeStillValid(t, f.db, rr) {
					t.Errorf("range read %s fails the validator's check on unchanged state", fmtRange(rr))
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.ranges, "\n") {
				t.Errorf("range reads\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.ranges, "\n"))
			}
			if len(ns.Reads) != 0 {
				t.Errorf("point reads %s, want none", fmtReads(ns.Reads))
			}
		})
	}
}

// TestRangeReadPhantoms checks that a key committed after simulation inside
// what the contract observed fails the validator's re-check, and one
// outside it does not.
func TestRangeReadPhantoms(t *testing.T) {
	tests := []struct {
		name    string
		script  []string
		phantom string
		caught  bool
	}{
		{"inside a page", []string{"range", "a", "b", "2", ""}, "a1x", true},
		{"between page and bookmark", []string{"range", "a", "b", "2", ""}, "a2x", true},
		{"past the bookmark", []string{"range", "a", "b", "2", ""}, "a3x", false},
		{"before an own-write bookmark", []string{"put", "a2y", "m", "range", "a", "b", "2", ""}, "a2x", true},
		{"past an own-write bookmark", []string{"put", "a2y", "m", "range", "a", "b", "2", ""}, "a2z", false},
		{"past an exhausted range", []string{"range", "a", "a3", "0", ""}, "a3x", false},
		{"inside an exhausted range", []string{"range", "a", "a3", "0", ""}, "a0", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.commit(t, "a1=1", "a2=2", "a3=3", "a4=4")
			rr := nsSet(t, f.endorse(t, "do", tc.script...)).RangeReads[0]
			f.commit(t, tc.phantom+"=p")
			if caught := !rangeStillValid(t, f.db, rr); caught != tc.caught {
				t.Errorf("phantom %q caught %v, want %v (range read %s)", tc.phantom, caught, tc.caught, fmtRange(rr))
			}
		})
	}
}

func TestStubRefusals(t *testing.T) {
	f := newFixture(t)
	long := strings.Repeat("k", contract.MaxKeyBytes+1)
	tests := []struct {
		name   string
		script []string
		want   string
	}{
		{"empty key", []string{"put", "", "v"}, "invalid key"},
		{"long key", []string{"get", long}, "invalid key"},
		{"long key in mget", []string{"mget", "a," + long}, "invalid key"},
		{"value too large", []string{"putbig", "k", "4194305"}, "value too large"},
		{"empty event name", []string{"event", "", "x"}, "invalid event"},
		{"negative page", []string{"range", "a", "b", "-1", ""}, "invalid range"},
		{"start after end", []string{"range", "b", "a", "0", ""}, "invalid range"},
		{"bookmark outside", []string{"range", "b", "c", "0", "a"}, "invalid range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp := sign(t, proposal(t, f.client, testChannel, testNS, "do", tc.script...), f.client)
			resp := f.e(t).ProcessProposal(t.Context(), sp)
			if resp.Status != 500 || !strings.Contains(resp.Message, tc.want) || resp.Endorsement != nil {
				t.Fatalf("status %d message %q endorsement %v, want 500 naming %q", resp.Status, resp.Message, resp.Endorsement, tc.want)
			}
		})
	}
	// A value of exactly the limit is fine.
	rp := f.endorse(t, "do", "putbig", "k", "4194304")
	if n := len(nsSet(t, rp).Writes[0].Value); n != contract.MaxValueBytes {
		t.Fatalf("wrote %d bytes, want %d", n, contract.MaxValueBytes)
	}
}

func TestCreatorAndHeader(t *testing.T) {
	f := newFixture(t)
	p := proposal(t, f.admin, testChannel, testNS, "whoami")
	resp := f.e(t).ProcessProposal(t.Context(), sign(t, p, f.admin))
	if resp.Status != 200 {
		t.Fatal(resp.Message)
	}
	rp, err := f.e(t).Simulate(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := "Org1|admin|root|" + p.Header.TxId + "|ch1|1700000000123456789|" + itoa(len(f.admin.Identity().Cert))
	if string(rp.Result) != want {
		t.Fatalf("whoami %q, want %q", rp.Result, want)
	}
	if rp.ProposalHash != nil {
		t.Fatalf("Simulate set a proposal hash")
	}
}
