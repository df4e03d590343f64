package endorser

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/contract/wasm/wasmtest"
	"github.com/strand-ledger/strand/contracts/smallbank"
)

// wasmEndorser is an endorser whose contract kv is c.
func (f *fixture) wasmEndorser(t *testing.T, c contract.Contract) *Endorser {
	t.Helper()
	cfg := f.config(f.peer1)
	cfg.Contracts = map[string]contract.Contract{testNS: c}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func wasmModule(t *testing.T, code []byte) *wasm.Module {
	t.Helper()
	eng, err := wasm.NewEngine(wasm.Options{CacheDir: wasmtest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	m, err := eng.Compile(code)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (f *fixture) run(t *testing.T, e *Endorser, fn string, args ...string) (*api.ProposalResponse, *api.ResponsePayload) {
	t.Helper()
	resp := e.ProcessProposal(t.Context(), sign(t, proposal(t, f.client, testChannel, testNS, fn, args...), f.client))
	var rp api.ResponsePayload
	if resp.Status == 200 {
		if err := proto.Unmarshal(resp.ResponsePayload, &rp); err != nil {
			t.Fatal(err)
		}
	}
	return resp, &rp
}

// TestWasmC runs the C example (examples/kv-c) through the endorser: its
// reads, writes, range pages and event become the transaction's read/write
// set, and a failing call is a named refusal that leaves the endorser
// serving.
func TestWasmC(t *testing.T) {
	f := newFixture(t)
	f.commit(t, "a=1", "b=22", "c=333")
	e := f.wasmEndorser(t, wasmModule(t, wasmtest.C(t, "examples/kv-c/kv.c")))
	resp, rp := f.run(t, e, "put", "d", "4444")
	if resp.Status != 200 || fmtWrites(rp.Rwset.Namespaces[0].Writes) != "d=4444" || rp.Event.GetName() != "put" || string(rp.Event.GetPayload()) != "d" {
		t.Fatalf("put: %d %s, rwset %v, event %v", resp.Status, resp.Message, rp.Rwset, rp.Event)
	}
	if resp, rp = f.run(t, e, "get", "b"); resp.Status != 200 || string(rp.Result) != "22" || fmtReads(rp.Rwset.Namespaces[0].Reads) != "b@0:1" {
		t.Fatalf("get b: %d %s, result %q, reads %s", resp.Status, resp.Message, rp.Result, fmtReads(rp.Rwset.GetNamespaces()[0].GetReads()))
	}
	if resp, rp = f.run(t, e, "list", "a", "", "3"); resp.Status != 200 || string(rp.Result) != "a=1\nb=22\nc=333\n" {
		t.Fatalf("list: %d %s, result %q", resp.Status, resp.Message, rp.Result)
	}
	if resp, rp = f.run(t, e, "who"); resp.Status != 200 || string(rp.Result) != "Org1/alice@"+rp.TxId {
		t.Fatalf("who: %d %s, result %q", resp.Status, resp.Message, rp.Result)
	}
	resp, _ = f.run(t, e, "get", "zz")
	checkRefused(t, resp, 404, "kv.get: key does not exist")
	resp, _ = f.run(t, e, "put", "", "v")
	checkRefused(t, resp, 500, "invalid key")
}

// TestWasmSmallbankSameRWSet: the WebAssembly Smallbank and the built-in
// one endorse the same proposal into the same response payload.
func TestWasmSmallbankSameRWSet(t *testing.T) {
	f := newFixture(t)
	f.commit(t, "checking_1=100", "savings_1=50", "checking_2=7", "savings_2=0")
	w := f.wasmEndorser(t, wasmModule(t, wasmtest.Go(t, "examples/smallbank")))
	b := f.wasmEndorser(t, smallbank.New())
	for _, c := range [][]string{
		{"send_payment", "1", "2", "30"}, {"amalgamate", "1", "2"}, {"query", "2"}, {"write_check", "2", "9"},
		{"send_payment", "2", "1", "8"}, {"create_account", "3", "Carol", "5", "5"}, {"deposit_checking", "9", "1"},
	} {
		sp := sign(t, proposal(t, f.client, testChannel, testNS, c[0], c[1:]...), f.client)
		rw, rb := w.ProcessProposal(t.Context(), sp), b.ProcessProposal(t.Context(), sp)
		if rw.Status != rb.Status || rw.Message != rb.Message {
			t.Errorf("%q: wasm %d %q, built-in %d %q", c, rw.Status, rw.Message, rb.Status, rb.Message)
			continue
		}
		var pw, pb api.ResponsePayload
		if err := proto.Unmarshal(rw.ResponsePayload, &pw); err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(rb.ResponsePayload, &pb); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&pw, &pb) {
			t.Errorf("%q: wasm payload %v, built-in %v", c, &pw, &pb)
		}
	}
}
