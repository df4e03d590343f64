package endorser

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/memdb"
)

const (
	testChannel = "ch1"
	testNS      = "kv"
)

// fixture is a two-org channel with committed state in a real memdb.
type fixture struct {
	ca1, ca2      *identity.CA
	reg           *identity.Registry
	client, admin *identity.Signer // Org1
	peer1, peer2  *identity.Signer // Org1, Org2
	db            *memdb.DB
	height        uint64
	used          sync.Map // tx ids Seen reports as used
	contract      *testContract
	release       chan struct{} // closed at cleanup: unblocks "block"
	late          chan error    // what a blocked call's late stub call returned
	clock         func() time.Time
	timeout       time.Duration
	state         State // defaults to db
	endorser      *Endorser
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{db: memdb.New(), release: make(chan struct{}), late: make(chan error, 16)}
	f.ca1, f.ca2 = mustCA(t, "Org1"), mustCA(t, "Org2")
	reg, err := identity.NewRegistry([]identity.Org{
		{ID: "Org1", CACerts: [][]byte{f.ca1.CertDER()}},
		{ID: "Org2", CACerts: [][]byte{f.ca2.CertDER()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.reg = reg
	f.client = mustIssue(t, f.ca1, "alice", identity.RoleClient)
	f.admin = mustIssue(t, f.ca1, "root", identity.RoleAdmin)
	f.peer1 = mustIssue(t, f.ca1, "peer0.org1", identity.RolePeer)
	f.peer2 = mustIssue(t, f.ca2, "peer0.org2", identity.RolePeer)
	f.contract = &testContract{release: f.release, late: f.late}
	t.Cleanup(func() { close(f.release) })
	return f
}

func mustCA(t testing.TB, org string) *identity.CA {
	t.Helper()
	ca, err := identity.NewCA(org, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustIssue(t testing.TB, ca *identity.CA, name string, role identity.Role) *identity.Signer {
	t.Helper()
	s, err := ca.Issue(name, role, identity.ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) config(signer *identity.Signer) Config {
	state := f.state
	if state == nil {
		state = f.db
	}
	return Config{
		Channel: testChannel, Registry: f.reg, Signer: signer,
		Contracts: map[string]contract.Contract{testNS: f.contract, "other": f.contract},
		State:     state,
		Seen: func(txID string) (bool, error) {
			_, ok := f.used.Load(txID)
			return ok, nil
		},
		Timeout: f.timeout, Clock: f.clock,
	}
}

func (f *fixture) newEndorser(t testing.TB, signer *identity.Signer) *Endorser {
	t.Helper()
	e, err := New(f.config(signer))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// e returns the fixture's endorser (peer1), made on first use.
func (f *fixture) e(t testing.TB) *Endorser {
	if f.endorser == nil {
		f.endorser = f.newEndorser(t, f.peer1)
	}
	return f.endorser
}

// commit applies one block of puts ("key=value") and deletes ("-key") to
// the namespace kv; write i gets version (block, i).
func (f *fixture) commit(t testing.TB, ops ...string) uint64 {
	t.Helper()
	var b statedb.Batch
	block := f.height
	for i, op := range ops {
		v := statedb.Version{Block: block, Tx: uint32(i)}
		if k, ok := strings.CutPrefix(op, "-"); ok {
			b.Delete(testNS, k, v)
			continue
		}
		k, val, _ := strings.Cut(op, "=")
		b.Put(testNS, k, []byte(val), v)
	}
	f.height++
	if err := f.db.Apply(&b, f.height, false); err != nil {
		t.Fatal(err)
	}
	return block
}

// proposal builds a proposal by creator for contract.fn(args).
func proposal(t testing.TB, creator *identity.Signer, channel, contractName, fn string, args ...string) *api.Proposal {
	t.Helper()
	nonce := make([]byte, 24)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	hdr := &api.TxHeader{Channel: channel, Creator: creator.Identity(), Nonce: nonce, TimestampUnixNano: 1_700_000_000_123_456_789}
	hdr.TxId = api.TxID(nonce, hdr.Creator)
	p := &api.Proposal{Header: hdr, Contract: contractName, Function: fn}
	for _, a := range args {
		p.Args = append(p.Args, []byte(a))
	}
	return p
}

// sign encodes p and signs it as signer.
func sign(t testing.TB, p *api.Proposal, signer *identity.Signer) *api.SignedProposal {
	t.Helper()
	raw, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.Sign(raw)
	if err != nil {
		t.Fatal(err)
	}
	return &api.SignedProposal{Proposal: raw, Signature: sig}
}

// endorse runs fn(args) as the client through ProcessProposal and returns
// the decoded response payload; it fails the test unless status is 200.
func (f *fixture) endorse(t testing.TB, fn string, args ...string) *api.ResponsePayload {
	t.Helper()
	sp := sign(t, proposal(t, f.client, testChannel, testNS, fn, args...), f.client)
	resp := f.e(t).ProcessProposal(context.Background(), sp)
	if resp.Status != 200 {
		t.Fatalf("%s(%q): status %d: %s", fn, args, resp.Status, resp.Message)
	}
	var rp api.ResponsePayload
	if err := proto.Unmarshal(resp.ResponsePayload, &rp); err != nil {
		t.Fatal(err)
	}
	return &rp
}

// testContract runs scripts ("do") and misbehaves on request.
type testContract struct {
	release <-chan struct{}
	late    chan<- error
}

func (c *testContract) Invoke(s contract.Stub) ([]byte, error) {
	args := make([]string, len(s.Args()))
	for i, a := range s.Args() {
		args[i] = string(a)
	}
	switch s.Function() {
	case "do":
		return script(s, args)
	case "whoami":
		cr := s.Creator()
		return fmt.Appendf(nil, "%s|%s|%s|%s|%s|%d|%d", cr.Org, cr.Role, cr.Name, s.TxID(), s.Channel(),
			s.Timestamp().UnixNano(), len(cr.Cert)), nil
	case "panic":
		panic("boom")
	case "goexit":
		runtime.Goexit()
	case "block":
		<-c.release
		c.late <- s.PutState("late", []byte("x")) // not reached by an abandoned call: the stub ends it
		return nil, nil
	case "spin": // a runaway that keeps reading state
		for {
			_, _ = s.GetState("k")
		}
	case "fail":
		st, _ := strconv.Atoi(args[0])
		return nil, &contract.Error{Status: st, Message: args[1]}
	case "plainerr":
		return nil, errors.New("disk on fire")
	case "swallow": // ignores a state error
		_, _ = s.GetState("k")
		return []byte("fine"), nil
	}
	return nil, contract.Errorf("no function %q", s.Function())
}

// script runs ops: put k v | del k | get k | mget k1,k2 | range start end
// pageSize bookmark | event name payload | putbig k n. It returns one line
// per read.
func script(s contract.Stub, a []string) ([]byte, error) {
	var out []string
	for len(a) > 0 {
		op := a[0]
		var err error
		switch op {
		case "put":
			err, a = s.PutState(a[1], []byte(a[2])), a[3:]
		case "putbig":
			n, _ := strconv.Atoi(a[2])
			err, a = s.PutState(a[1], make([]byte, n)), a[3:]
		case "del":
			err, a = s.DelState(a[1]), a[2:]
		case "get":
			var v []byte
			v, err = s.GetState(a[1])
			out, a = append(out, a[1]+"="+show(v)), a[2:]
		case "mget":
			var vs [][]byte
			vs, err = s.GetMultipleStates(strings.Split(a[1], ",")...)
			var parts []string
			for _, v := range vs {
				parts = append(parts, show(v))
			}
			out, a = append(out, strings.Join(parts, ",")), a[2:]
		case "range":
			n, _ := strconv.Atoi(a[3])
			var p contract.Page
			p, err = s.GetStateByRange(a[1], a[2], n, a[4])
			var kvs []string
			for _, kv := range p.KVs {
				kvs = append(kvs, kv.Key+"="+show(kv.Value))
			}
			out, a = append(out, "["+strings.Join(kvs, " ")+"] next="+p.Bookmark), a[5:]
		case "event":
			err, a = s.SetEvent(a[1], []byte(a[2])), a[3:]
		default:
			return nil, contract.Errorf("unknown op %q", op)
		}
		if err != nil {
			return nil, err
		}
	}
	return []byte(strings.Join(out, "\n")), nil
}

func show(v []byte) string {
	if v == nil {
		return "<nil>"
	}
	return string(v)
}

// failingState is a State whose reads fail.
type failingState struct{}

func (failingState) Get(string, string) (statedb.Value, bool, error) {
	return statedb.Value{}, false, errors.New("disk read error")
}

func (failingState) Scan(string, string, string, func(string, statedb.Value) bool) error {
	return errors.New("disk read error")
}

// downState is a State whose reads find the database unavailable (a
// memory node that does not answer).
type downState struct{}

func (downState) Get(string, string) (statedb.Value, bool, error) {
	return statedb.Value{}, false, fmt.Errorf("%w: memnode 127.0.0.1:1: GetMany: connection refused", statedb.ErrUnavailable)
}

func (downState) Scan(string, string, string, func(string, statedb.Value) bool) error {
	return fmt.Errorf("%w: memnode 127.0.0.1:1: Scan: the node restarted", statedb.ErrStateLost)
}

// rangeStillValid mirrors committer/mvcc.go: the range read's covered
// span, re-scanned now, holds exactly the keys and versions it recorded.
func rangeStillValid(t testing.TB, db State, rr *api.RangeRead) bool {
	t.Helper()
	end := rr.EndKey
	if !rr.Exhausted {
		if len(rr.Reads) == 0 {
			return true
		}
		end = rr.Reads[len(rr.Reads)-1].Key + "\x00"
	}
	var now []*api.KVRead
	err := db.Scan(testNS, rr.StartKey, end, func(k string, v statedb.Value) bool {
		now = append(now, &api.KVRead{Key: k, Version: &api.Version{Block: v.Version.Block, Tx: v.Version.Tx}})
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmtReads(now) == fmtReads(rr.Reads)
}

// fmtReads formats reads as "k@block:tx" ("k@-" when absent).
func fmtReads(rs []*api.KVRead) string {
	var parts []string
	for _, r := range rs {
		if r.Version == nil {
			parts = append(parts, r.Key+"@-")
		} else {
			parts = append(parts, fmt.Sprintf("%s@%d:%d", r.Key, r.Version.Block, r.Version.Tx))
		}
	}
	return strings.Join(parts, " ")
}

func fmtWrites(ws []*api.KVWrite) string {
	var parts []string
	for _, w := range ws {
		if w.IsDelete {
			parts = append(parts, "-"+w.Key)
		} else {
			parts = append(parts, w.Key+"="+string(w.Value))
		}
	}
	return strings.Join(parts, " ")
}

func fmtRange(rr *api.RangeRead) string {
	return fmt.Sprintf("[%q,%q) exhausted=%v reads=%s", rr.StartKey, rr.EndKey, rr.Exhausted, fmtReads(rr.Reads))
}

func itoa(n int) string { return strconv.Itoa(n) }
