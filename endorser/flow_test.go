package endorser_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/ledger/statedb/pebbledb"
	"github.com/strand-ledger/strand/policy"
)

// flow is one peer's ledger and committer, two endorsers (one per org) over
// its state, a client and an orderer signer: the whole execute-order-
// validate path except the network.
type flow struct {
	t        *testing.T
	client   *identity.Signer
	orderer  *identity.Signer
	e1, e2   *endorser.Endorser
	c        *committer.Committer
	sub      *committer.Subscription
	prevHash []byte
	next     uint64
	nonce    uint64
}

func newFlow(t *testing.T) *flow {
	t.Helper()
	cas := map[string]*identity.CA{}
	var orgs []identity.Org
	for _, org := range []string{"Org1", "Org2", "OrdererOrg"} {
		ca, err := identity.NewCA(org, identity.ECDSAP256)
		if err != nil {
			t.Fatal(err)
		}
		cas[org] = ca
		orgs = append(orgs, identity.Org{ID: org, CACerts: [][]byte{ca.CertDER()}})
	}
	issue := func(org, name string, role identity.Role) *identity.Signer {
		s, err := cas[org].Issue(name, role, identity.ECDSAP256)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	reg, err := identity.NewRegistry(orgs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	store, err := ledger.OpenBlockStore(filepath.Join(dir, "blocks"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := pebbledb.Open(filepath.Join(dir, "state"), pebbledb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ch := committer.Channel{Name: "ch", Registry: reg, OrdererOrgs: []string{"OrdererOrg"},
		Policies: map[string]*policy.Policy{smallbank.Name: policy.MustParse("AND('Org1.peer','Org2.peer')")}}
	c, err := committer.New(ch, store, db, committer.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); store.Close(); db.Close() })
	f := &flow{t: t, client: issue("Org1", "client1", identity.RoleClient), orderer: issue("OrdererOrg", "orderer0", identity.RoleOrderer), c: c}
	for i, org := range []string{"Org1", "Org2"} {
		e, err := endorser.New(endorser.Config{
			Channel: "ch", Registry: reg, Signer: issue(org, "peer0."+org, identity.RolePeer),
			Contracts: map[string]contract.Contract{smallbank.Name: smallbank.New()},
			State:     db, Seen: endorser.SeenIn(store.TxLocation),
		})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			f.e1 = e
		} else {
			f.e2 = e
		}
	}
	f.sub = c.Subscribe(64)
	return f
}

// propose builds and signs a smallbank proposal.
func (f *flow) propose(fn string, args ...string) *api.SignedProposal {
	f.t.Helper()
	f.nonce++
	nonce := binary.BigEndian.AppendUint64([]byte("flow-"), f.nonce)
	hdr := &api.TxHeader{Channel: "ch", Creator: f.client.Identity(), Nonce: nonce, TimestampUnixNano: time.Now().UnixNano()}
	hdr.TxId = api.TxID(nonce, hdr.Creator)
	p := &api.Proposal{Header: hdr, Contract: smallbank.Name, Function: fn}
	for _, a := range args {
		p.Args = append(p.Args, []byte(a))
	}
	raw, err := proto.Marshal(p)
	if err != nil {
		f.t.Fatal(err)
	}
	sig, err := f.client.Sign(raw)
	if err != nil {
		f.t.Fatal(err)
	}
	return &api.SignedProposal{Proposal: raw, Signature: sig}
}

// endorse gathers both orgs' endorsements and returns the signed transaction.
func (f *flow) endorse(sp *api.SignedProposal) []byte {
	f.t.Helper()
	r1 := f.e1.ProcessProposal(context.Background(), sp)
	r2 := f.e2.ProcessProposal(context.Background(), sp)
	if r1.Status != api.StatusOK || r2.Status != api.StatusOK {
		f.t.Fatalf("endorsement failed: %d %s / %d %s", r1.Status, r1.Message, r2.Status, r2.Message)
	}
	if string(r1.ResponsePayload) != string(r2.ResponsePayload) {
		f.t.Fatal("the two endorsers simulated different results")
	}
	prop := new(api.Proposal)
	if err := proto.Unmarshal(sp.Proposal, prop); err != nil {
		f.t.Fatal(err)
	}
	raw, _, err := api.SignTx(&api.TxPayload{Header: prop.Header, Contract: prop.Contract, ResponsePayload: r1.ResponsePayload,
		Endorsements: []*api.Endorsement{r1.Endorsement, r2.Endorsement}}, f.client)
	if err != nil {
		f.t.Fatal(err)
	}
	return raw
}

// commit orders txs into the next block and returns their codes.
func (f *flow) commit(txs ...[]byte) []api.TxValidationCode {
	f.t.Helper()
	b, err := api.BuildBlock(f.next, f.prevHash, txs, f.orderer)
	if err != nil {
		f.t.Fatal(err)
	}
	raw, err := proto.Marshal(b)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.c.Deliver(raw); err != nil {
		f.t.Fatal(err)
	}
	f.next, f.prevHash = f.next+1, api.HeaderHash(b.Header)
	ev := <-f.sub.C
	codes := make([]api.TxValidationCode, len(ev.Codes))
	for i, c := range ev.Codes {
		codes[i] = api.TxValidationCode(c)
	}
	return codes
}

func (f *flow) balance(id string) smallbank.Balance {
	f.t.Helper()
	prop := new(api.Proposal)
	if err := proto.Unmarshal(f.propose("query", id).Proposal, prop); err != nil {
		f.t.Fatal(err)
	}
	resp, err := f.e1.Simulate(context.Background(), prop)
	if err != nil {
		f.t.Fatal(err)
	}
	var b smallbank.Balance
	if err := json.Unmarshal(resp.Result, &b); err != nil {
		f.t.Fatal(err)
	}
	return b
}

// TestExecuteOrderValidate runs Smallbank through real endorsers and the
// real committer: endorsement against committed state, ordering into
// blocks, MVCC at validation, and the replay protection of both.
func TestExecuteOrderValidate(t *testing.T) {
	f := newFlow(t)
	codes := f.commit(
		f.endorse(f.propose("create_account", "alice", "Alice", "1000", "500")),
		f.endorse(f.propose("create_account", "bob", "Bob", "200", "0")),
	)
	if codes[0] != api.TxValidationCode_VALID || codes[1] != api.TxValidationCode_VALID {
		t.Fatalf("create_account codes %v", codes)
	}
	// Both simulated against the same committed state: the second to be
	// validated read alice's checking at a version the first one changed.
	payProposal := f.propose("send_payment", "alice", "bob", "100")
	pay := f.endorse(payProposal)
	dep := f.endorse(f.propose("deposit_checking", "alice", "50"))
	codes = f.commit(pay, dep)
	if codes[0] != api.TxValidationCode_VALID || codes[1] != api.TxValidationCode_MVCC_READ_CONFLICT {
		t.Fatalf("codes %v, want [VALID MVCC_READ_CONFLICT]", codes)
	}
	// Re-endorsed on fresh state, the deposit commits.
	if codes = f.commit(f.endorse(f.propose("deposit_checking", "alice", "50"))); codes[0] != api.TxValidationCode_VALID {
		t.Fatalf("retried deposit: %v", codes)
	}
	a, b := f.balance("alice"), f.balance("bob")
	if a != (smallbank.Balance{Checking: 950, Savings: 500}) || b != (smallbank.Balance{Checking: 300, Savings: 0}) {
		t.Fatalf("alice %+v, bob %+v", a, b)
	}
	if total := a.Checking + a.Savings + b.Checking + b.Savings; total != 1700+50 {
		t.Fatalf("Smallbank invariant: total %d, want %d", total, 1750)
	}
	// A committed proposal cannot be endorsed again, and a replayed
	// transaction is refused by the committer.
	if r := f.e1.ProcessProposal(context.Background(), payProposal); r.Status != 409 || r.Endorsement != nil {
		t.Fatalf("re-endorsing a committed proposal: status %d (%s), want 409 and no endorsement", r.Status, r.Message)
	}
	if codes = f.commit(pay); codes[0] != api.TxValidationCode_DUPLICATE_TXID {
		t.Fatalf("replayed transaction: %v, want DUPLICATE_TXID", codes)
	}
}
