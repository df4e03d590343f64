package endorser

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract/external"
	"github.com/strand-ledger/strand/contract/external/externaltest"
	"github.com/strand-ledger/strand/contracts/smallbank"
)

// externalRuntime is a runtime whose calls show pki's peer certificate.
func externalRuntime(t *testing.T, pki *externaltest.PKI, timeout time.Duration) *external.Runtime {
	t.Helper()
	r, err := external.New(external.Options{Client: pki.ClientTLS(), Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func externalContract(t *testing.T, r *external.Runtime, raw []byte) *external.Contract {
	t.Helper()
	c, err := r.Contract(testNS, raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestExternalSmallbankSameRWSet: Smallbank served by the Go SDK over
// gRPC with mutual TLS and the built-in Smallbank endorse the same
// proposal into the same response payload, errors included.
func TestExternalSmallbankSameRWSet(t *testing.T) {
	f := newFixture(t)
	f.commit(t, "checking_1=100", "savings_1=50", "checking_2=7", "savings_2=0")
	pki := externaltest.NewPKI(t)
	addr := externaltest.ServeGo(t, pki, smallbank.New())
	x := f.wasmEndorser(t, externalContract(t, externalRuntime(t, pki, 0), pki.Package(t, addr)))
	b := f.wasmEndorser(t, smallbank.New())
	for _, c := range [][]string{
		{"send_payment", "1", "2", "30"}, {"amalgamate", "1", "2"}, {"query", "2"}, {"write_check", "2", "9"},
		{"send_payment", "2", "1", "8"}, {"create_account", "3", "Carol", "5", "5"}, {"deposit_checking", "9", "1"},
		{"no_such_function"}, {"send_payment", "1"},
	} {
		sp := sign(t, proposal(t, f.client, testChannel, testNS, c[0], c[1:]...), f.client)
		rx, rb := x.ProcessProposal(t.Context(), sp), b.ProcessProposal(t.Context(), sp)
		if rx.Status != rb.Status || rx.Message != rb.Message {
			t.Errorf("%q: external %d %q, built-in %d %q", c, rx.Status, rx.Message, rb.Status, rb.Message)
			continue
		}
		var px, pb api.ResponsePayload
		if err := proto.Unmarshal(rx.ResponsePayload, &px); err != nil {
			t.Fatal(err)
		}
		if err := proto.Unmarshal(rb.ResponsePayload, &pb); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&px, &pb) {
			t.Errorf("%q: external payload %v, built-in %v", c, &px, &pb)
		}
	}
}

// TestExternalPython runs the Python example (examples/kv-py) as a real
// process through the endorser, then its misbehaving functions: each
// failure is a named refusal and a counter, and the next call is served
// at once.
func TestExternalPython(t *testing.T) {
	f := newFixture(t)
	f.commit(t, "a=1", "b=22", "c=333")
	pki := externaltest.NewPKI(t)
	py := externaltest.StartPython(t, pki, "contract/external/testdata/faulty_server.py")
	// Calls get 3 s, far more than they need even on a loaded machine; the
	// deadline's own test uses a second runtime with a short one.
	r, short := externalRuntime(t, pki, 3*time.Second), externalRuntime(t, pki, 200*time.Millisecond)
	e := f.wasmEndorser(t, externalContract(t, r, pki.Package(t, py.Addr)))

	resp, rp := f.run(t, e, "put", "d", "4444")
	if resp.Status != 200 || fmtWrites(rp.Rwset.Namespaces[0].Writes) != "d=4444" || rp.Event.GetName() != "put" || string(rp.Event.GetPayload()) != "d" {
		t.Fatalf("put: %d %s, rwset %v, event %v", resp.Status, resp.Message, rp.Rwset, rp.Event)
	}
	if resp, rp = f.run(t, e, "get", "b"); resp.Status != 200 || string(rp.Result) != "22" || fmtReads(rp.Rwset.Namespaces[0].Reads) != "b@0:1" {
		t.Fatalf("get b: %d %s, result %q, reads %s", resp.Status, resp.Message, rp.Result, fmtReads(rp.Rwset.GetNamespaces()[0].GetReads()))
	}
	if resp, rp = f.run(t, e, "list", "a", "", "2"); resp.Status != 200 || string(rp.Result) != "a=1\nb=22\nnext=c\n" {
		t.Fatalf("list: %d %s, result %q", resp.Status, resp.Message, rp.Result)
	}
	if resp, rp = f.run(t, e, "who"); resp.Status != 200 || string(rp.Result) != "Org1/alice@"+rp.TxId {
		t.Fatalf("who: %d %s, result %q", resp.Status, resp.Message, rp.Result)
	}
	if resp, rp = f.run(t, e, "flood", "1000"); resp.Status != 200 || len(rp.Rwset.Namespaces[0].Writes) != 1000 {
		t.Fatalf("flood: %d %s, %d writes", resp.Status, resp.Message, len(rp.Rwset.GetNamespaces()[0].GetWrites()))
	}
	resp, _ = f.run(t, e, "get", "zz")
	checkRefused(t, resp, 404, "kv.get: key zz does not exist")
	resp, _ = f.run(t, e, "put", "", "v")
	checkRefused(t, resp, 400, "kv.put: key '' is 0 bytes")

	// Slower than the deadline: a named error, and the next call at once.
	resp, _ = f.run(t, f.wasmEndorser(t, externalContract(t, short, pki.Package(t, py.Addr))), "sleep", "30000")
	checkRefused(t, resp, 500, "kv.sleep: external: contract server passed the call deadline")
	if resp, rp = f.run(t, e, "get", "a"); resp.Status != 200 || string(rp.Result) != "1" {
		t.Fatalf("get after a deadline: %d %s", resp.Status, resp.Message)
	}
	// The server dies mid-call (after a read): the connection is lost,
	// then the server is unreachable.
	resp, _ = f.run(t, e, "crash", "a")
	checkRefused(t, resp, 500, "kv.crash: external: connection to the contract server lost mid-call")
	if err := py.Cmd.Wait(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("the Python server ended with %v, want exit status 3", err)
	}
	resp, _ = f.run(t, e, "get", "a")
	checkRefused(t, resp, 500, "kv.get: external: contract server unreachable")
	if m := r.Metrics(); m.ConnLost != 1 || m.Unreachable != 1 || m.Calls != 10 || m.StateRequests < 1000 {
		t.Errorf("metrics %v, want 1 connection lost, 1 unreachable, 10 calls, 1000+ state requests", m)
	}
	if m := short.Metrics(); m.Deadlines != 1 || m.Calls != 1 {
		t.Errorf("metrics %v, want 1 deadline of 1 call", m)
	}
}

// TestExternalUnreachable: a server that is not there, or whose
// certificate the definition does not pin, fails the call with
// ErrUnreachable; the endorser serves its other contracts meanwhile.
func TestExternalUnreachable(t *testing.T) {
	f := newFixture(t)
	pki, other := externaltest.NewPKI(t), externaltest.NewPKI(t)
	r := externalRuntime(t, pki, 0)
	addr := externaltest.ServeGo(t, pki, smallbank.New())
	for _, c := range []struct{ name, pkg string }{
		{"no server", string(pki.Package(t, externaltest.Unused(t)))},
		{"server certificate of another CA", string(other.Package(t, addr))},
	} {
		e := f.wasmEndorser(t, externalContract(t, r, []byte(c.pkg)))
		resp, _ := f.run(t, e, "query", "1")
		checkRefused(t, resp, 500, "kv.query: external: contract server unreachable")
	}
	good := f.wasmEndorser(t, externalContract(t, r, pki.Package(t, addr)))
	if resp, _ := f.run(t, good, "create_account", "1", "A", "1", "1"); resp.Status != 200 {
		t.Fatalf("the pinned server: %d %s", resp.Status, resp.Message)
	}
	if m := r.Metrics(); m.Unreachable != 2 {
		t.Errorf("metrics %v, want 2 unreachable", m)
	}
}
