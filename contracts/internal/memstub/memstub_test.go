package memstub

import (
	"errors"
	"reflect"
	"testing"

	"github.com/strand-ledger/strand/contract"
)

// fnContract runs a Go function as a contract.
type fnContract func(contract.Stub) ([]byte, error)

func (f fnContract) Invoke(s contract.Stub) ([]byte, error) { return f(s) }

func keys(p contract.Page) []string {
	var ks []string
	for _, kv := range p.KVs {
		ks = append(ks, kv.Key)
	}
	return ks
}

func TestRangePagesAndOverlay(t *testing.T) {
	s := New()
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		s.Set(k, []byte(k))
	}
	_, err := s.Call(fnContract(func(st contract.Stub) ([]byte, error) {
		if err := st.DelState("b"); err != nil {
			return nil, err
		}
		if err := st.PutState("bb", []byte("new")); err != nil {
			return nil, err
		}
		var got []string
		bm := ""
		for {
			p, err := st.GetStateByRange("a", "e", 2, bm)
			if err != nil {
				return nil, err
			}
			got = append(got, keys(p)...)
			got = append(got, "|")
			if bm = p.Bookmark; bm == "" {
				break
			}
		}
		if want := []string{"a", "bb", "|", "c", "d", "|"}; !reflect.DeepEqual(got, want) {
			t.Errorf("pages %q, want %q", got, want)
		}
		p, _ := st.GetStateByRange("c", "", 0, "")
		if want := []string{"c", "d", "e"}; !reflect.DeepEqual(keys(p), want) || p.Bookmark != "" {
			t.Errorf("open range %q (bookmark %q), want %q", keys(p), p.Bookmark, want)
		}
		return nil, nil
	}), "f")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "bb", "c", "d", "e"}; !reflect.DeepEqual(s.Keys(), want) {
		t.Fatalf("committed keys %q, want %q", s.Keys(), want)
	}
}

func TestFailedCallRollsBack(t *testing.T) {
	s := New()
	_, err := s.Call(fnContract(func(st contract.Stub) ([]byte, error) {
		st.PutState("k", []byte("v"))
		if v, _ := st.GetState("k"); string(v) != "v" {
			t.Errorf("read-your-writes: got %q", v)
		}
		return nil, errors.New("no")
	}), "f")
	if err == nil || s.Get("k") != nil || len(s.Keys()) != 0 {
		t.Fatalf("err %v, keys %q: want the write discarded", err, s.Keys())
	}
	if w := s.Writes(); !reflect.DeepEqual(w, []string{"k"}) {
		t.Fatalf("Writes() = %q", w)
	}
}

func TestLimits(t *testing.T) {
	s := New()
	s.Call(fnContract(func(st contract.Stub) ([]byte, error) {
		if st.PutState("", nil) == nil || st.DelState(string(make([]byte, contract.MaxKeyBytes+1))) == nil {
			t.Error("bad key accepted")
		}
		if st.PutState("k", make([]byte, contract.MaxValueBytes+1)) == nil {
			t.Error("oversized value accepted")
		}
		if _, err := st.GetStateByRange("", "", -1, ""); err == nil {
			t.Error("negative page size accepted")
		}
		return nil, nil
	}), "f")
}
