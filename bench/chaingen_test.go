package bench

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

var cgSmallSpec = ChainSpec{Accounts: 200, Blocks: 5, BlockSize: 20, Seed: 7, Alg: identity.ECDSAP256}

var cgSmallChain = sync.OnceValues(func() (*Chain, error) { return GenerateChain(cgSmallSpec, nil) })

func cgChain(t testing.TB) *Chain {
	t.Helper()
	c, err := cgSmallChain()
	if err != nil {
		t.Fatalf("GenerateChain(%+v): %v", cgSmallSpec, err)
	}
	return c
}

// cgBlock is a block and its transactions, decoded by the test itself.
type cgBlock struct {
	block *api.Block
	txs   []*api.Tx
}

func cgDecode(t *testing.T, c *Chain) []cgBlock {
	t.Helper()
	out := make([]cgBlock, len(c.Blocks))
	var prevHash []byte
	for n, raw := range c.Blocks {
		b := new(api.Block)
		if err := proto.Unmarshal(raw, b); err != nil {
			t.Fatalf("block %d: %v", n, err)
		}
		h := b.GetHeader()
		if h.GetNumber() != uint64(n) {
			t.Fatalf("block %d: header number %d", n, h.GetNumber())
		}
		if !bytes.Equal(h.GetPreviousHash(), prevHash) {
			t.Fatalf("block %d: previous hash %x, want %x", n, h.GetPreviousHash(), prevHash)
		}
		if got := api.DataHash(b.Transactions); !bytes.Equal(h.GetDataHash(), got) {
			t.Fatalf("block %d: data hash %x, want %x", n, h.GetDataHash(), got)
		}
		prevHash = api.HeaderHash(h)
		out[n].block = b
		for i, rawTx := range b.Transactions {
			tx, code, err := api.DecodeTx(rawTx)
			if code != api.TxValidationCode_VALID || err != nil {
				t.Fatalf("block %d tx %d: DecodeTx: %v %v", n, i, code, err)
			}
			out[n].txs = append(out[n].txs, tx)
		}
	}
	return out
}

func TestGenerateChainShape(t *testing.T) {
	c := cgChain(t)
	s := cgSmallSpec
	wantSetup := 1 // 200 accounts: 2 setup txs, one block
	if c.SetupBlocks != wantSetup || len(c.Blocks) != wantSetup+s.Blocks {
		t.Fatalf("SetupBlocks %d, %d blocks; want %d and %d", c.SetupBlocks, len(c.Blocks), wantSetup, wantSetup+s.Blocks)
	}
	if c.WorkloadTxs != s.Blocks*s.BlockSize {
		t.Errorf("WorkloadTxs %d, want %d", c.WorkloadTxs, s.Blocks*s.BlockSize)
	}
	if want := 3 + 1.0/float64(s.BlockSize); c.SigsPerTx != want {
		t.Errorf("SigsPerTx %v, want %v", c.SigsPerTx, want)
	}
	if c.Channel != "bench" || c.Contract != "smallbank" || c.Policy != "AND('Org1.peer','Org2.peer')" || c.OrdererOrg != "OrdererOrg" {
		t.Errorf("Channel %q Contract %q Policy %q OrdererOrg %q", c.Channel, c.Contract, c.Policy, c.OrdererOrg)
	}
	var orgs []string
	for _, o := range c.Orgs {
		orgs = append(orgs, o.ID)
	}
	if got := strings.Join(orgs, ","); got != "Org1,Org2,OrdererOrg" {
		t.Errorf("Orgs %s, want Org1,Org2,OrdererOrg", got)
	}
	if want := int64(s.Accounts) * 2_000_000; c.InitialTotal != want {
		t.Errorf("InitialTotal %d, want %d", c.InitialTotal, want)
	}

	blocks := cgDecode(t, c)
	seen := map[string]bool{}
	for n, b := range blocks {
		if n >= c.SetupBlocks && len(b.txs) != s.BlockSize {
			t.Errorf("workload block %d has %d txs, want %d", n, len(b.txs), s.BlockSize)
		}
		keys := map[string]int{}
		for i, tx := range b.txs {
			if seen[tx.ID()] {
				t.Errorf("block %d tx %d: duplicate tx id %s", n, i, tx.ID())
			}
			seen[tx.ID()] = true
			if tx.Payload.Header.Channel != c.Channel || tx.Payload.Contract != c.Contract {
				t.Errorf("block %d tx %d: channel %q contract %q", n, i, tx.Payload.Header.Channel, tx.Payload.Contract)
			}
			nss := tx.RWSet().GetNamespaces()
			if len(nss) != 1 || nss[0].Namespace != c.Contract {
				t.Fatalf("block %d tx %d: namespaces %v, want only %q", n, i, nss, c.Contract)
			}
			for _, k := range cgTxKeys(nss[0]) {
				if j, ok := keys[k]; ok {
					t.Errorf("block %d: txs %d and %d both touch key %q", n, j, i, k)
				}
				keys[k] = i
			}
		}
	}
}

// cgTxKeys returns every key a namespace's reads and writes name, once.
func cgTxKeys(ns *api.NsRWSet) []string {
	set := map[string]bool{}
	var keys []string
	add := func(k string) {
		if !set[k] {
			set[k] = true
			keys = append(keys, k)
		}
	}
	for _, r := range ns.Reads {
		add(r.Key)
	}
	for _, w := range ns.Writes {
		add(w.Key)
	}
	return keys
}

func TestGenerateChainSignatures(t *testing.T) {
	c := cgChain(t)
	reg, err := identity.NewRegistry(c.Orgs)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(what string, id *api.Identity, org string, role identity.Role, msg, sig []byte) {
		t.Helper()
		m, err := reg.Member(id)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if m.Role != role || (org != "" && m.Org != org) {
			t.Errorf("%s: signer %s of %s with role %v; want org %q role %v", what, m.Name, m.Org, m.Role, org, role)
		}
		if err := m.Verify(msg, sig); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		bad := bytes.Clone(msg)
		bad[0] ^= 1
		if err := m.Verify(bad, sig); !errors.Is(err, identity.ErrBadSignature) {
			t.Fatalf("%s: signature verifies over altered bytes (err %v)", what, err)
		}
	}
	k := 0
	for n, b := range cgDecode(t, c) {
		bs := b.block.Metadata.GetSignature()
		verify(fmt.Sprintf("block %d", n), bs.GetSigner(), "OrdererOrg", identity.RoleOrderer, api.HeaderHash(b.block.Header), bs.GetSignature())
		for i, tx := range b.txs {
			what := fmt.Sprintf("block %d tx %d", n, i)
			verify(what+" creator", tx.Creator(), "", identity.RoleClient, tx.Envelope.Payload, tx.Envelope.Signature)
			es := tx.Payload.Endorsements
			if len(es) != 2 || es[0].GetEndorser().GetOrg() != "Org1" || es[1].GetEndorser().GetOrg() != "Org2" {
				t.Fatalf("%s: endorsements %v, want peer0.Org1 and peer0.Org2", what, es)
			}
			for j, e := range es {
				verify(fmt.Sprintf("%s endorsement %d", what, j), e.Endorser, e.Endorser.GetOrg(), identity.RolePeer, tx.Payload.ResponsePayload, e.Signature)
			}
			// The proposal hash covers the proposal that made this tx.
			call := c.calls[k]
			k++
			prop, err := proto.Marshal(&api.Proposal{Header: tx.Payload.Header, Contract: c.Contract, Function: call.function, Args: call.args})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(tx.Response.ProposalHash, api.ProposalHash(prop)) {
				t.Errorf("%s: proposal hash does not match %s%q", what, call.function, call.args)
			}
		}
	}
	if k != len(c.calls) {
		t.Errorf("%d txs in the chain, %d calls recorded", k, len(c.calls))
	}
}

// cgValue is a committed key in the test's own state.
type cgValue struct {
	value   []byte
	version *api.Version
}

// TestGenerateChainReplay validates the chain in order against a map, with
// MVCC checks, executes each call independently to check its writes, and
// checks the final state and the Smallbank invariant.
func TestGenerateChainReplay(t *testing.T) {
	c := cgChain(t)
	state := map[string]cgValue{}
	total := int64(0) // from the calls alone
	k := 0
	for n, b := range cgDecode(t, c) {
		if n == c.SetupBlocks {
			if got := cgTotal(t, state); got != c.InitialTotal || total != c.InitialTotal {
				t.Fatalf("after setup: state holds %d, calls created %d; InitialTotal %d", got, total, c.InitialTotal)
			}
		}
		var batch []*api.KVWrite
		var versions []*api.Version
		for i, tx := range b.txs {
			ns := tx.RWSet().Namespaces[0]
			for _, r := range ns.Reads {
				cur, ok := state[r.Key]
				if ok != (r.Version != nil) || (ok && !proto.Equal(cur.version, r.Version)) {
					t.Fatalf("block %d tx %d: MVCC conflict on %q: read version %v, committed %v (exists %v)", n, i, r.Key, r.Version, cur.version, ok)
				}
			}
			call := c.calls[k]
			k++
			want, delta := cgExec(t, state, call)
			total += delta
			got := map[string]string{}
			for _, w := range ns.Writes {
				if w.IsDelete {
					t.Fatalf("block %d tx %d: deletes %q", n, i, w.Key)
				}
				got[w.Key] = string(w.Value)
				batch = append(batch, w)
				versions = append(versions, &api.Version{Block: uint64(n), Tx: uint32(i)})
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("block %d tx %d: %s%q writes %v, want %v", n, i, call.function, call.args, got, want)
			}
			for _, key := range cgTxKeys(ns) {
				if !cgReads(ns, key) {
					t.Errorf("block %d tx %d writes %q without reading it", n, i, key)
				}
			}
		}
		for j, w := range batch {
			state[w.Key] = cgValue{w.Value, versions[j]}
		}
	}
	if got := cgTotal(t, state); got != c.FinalTotal || total != c.FinalTotal {
		t.Errorf("final total: state %d, from the calls %d, FinalTotal %d", got, total, c.FinalTotal)
	}
	exp := c.ExpectedState()
	if len(exp) != len(state) || len(exp) != 2*c.Spec.Accounts {
		t.Fatalf("ExpectedState has %d keys, replay %d, want %d", len(exp), len(state), 2*c.Spec.Accounts)
	}
	for key, v := range state {
		if !bytes.Equal(exp[key], v.value) {
			t.Errorf("key %q: ExpectedState %q, replay %q", key, exp[key], v.value)
		}
	}
}

func cgReads(ns *api.NsRWSet, key string) bool {
	for _, r := range ns.Reads {
		if r.Key == key {
			return true
		}
	}
	return false
}

func cgTotal(t *testing.T, state map[string]cgValue) int64 {
	t.Helper()
	var sum int64
	for key, v := range state {
		b, err := ParseBalance(v.value)
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		sum += b
	}
	return sum
}

// cgExec executes call on state, written independently of the
// generator's model, and returns the writes it makes and the money it adds.
func cgExec(t *testing.T, state map[string]cgValue, call chainCall) (map[string]string, int64) {
	t.Helper()
	arg := func(i int) int64 {
		if i >= len(call.args) {
			t.Fatalf("%s%q: no argument %d", call.function, call.args, i)
		}
		v, err := strconv.ParseInt(string(call.args[i]), 10, 64)
		if err != nil {
			t.Fatalf("%s%q: %v", call.function, call.args, err)
		}
		return v
	}
	get := func(key string) int64 {
		v, ok := state[key]
		if !ok {
			t.Fatalf("%s%q: key %q does not exist", call.function, call.args, key)
		}
		b, err := ParseBalance(v.value)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	chk := func(id int64) string { return fmt.Sprintf("checking_%d", id) }
	sav := func(id int64) string { return fmt.Sprintf("savings_%d", id) }
	str := func(v int64) string { return strconv.FormatInt(v, 10) }
	amountOK := func(a int64) {
		if a < 1 || a > 200 {
			t.Fatalf("%s%q: amount %d out of [1, 200]", call.function, call.args, a)
		}
	}
	twoAccounts := func() {
		if arg(0) == arg(1) {
			t.Fatalf("%s%q: the same account twice", call.function, call.args)
		}
	}
	w := map[string]string{}
	switch call.function {
	case "create_accounts":
		first, count, c, s := arg(0), arg(1), arg(2), arg(3)
		for id := first; id < first+count; id++ {
			if _, ok := state[chk(id)]; ok {
				t.Fatalf("account %d created twice", id)
			}
			w[chk(id)], w[sav(id)] = str(c), str(s)
		}
		return w, count * (c + s)
	case "deposit_checking":
		amountOK(arg(1))
		w[chk(arg(0))] = str(get(chk(arg(0))) + arg(1))
		return w, arg(1)
	case "write_check":
		amountOK(arg(1))
		w[chk(arg(0))] = str(get(chk(arg(0))) - arg(1))
		return w, -arg(1)
	case "transact_savings":
		amountOK(arg(1))
		w[sav(arg(0))] = str(get(sav(arg(0))) + arg(1))
		return w, arg(1)
	case "send_payment":
		twoAccounts()
		amountOK(arg(2))
		w[chk(arg(0))] = str(get(chk(arg(0))) - arg(2))
		w[chk(arg(1))] = str(get(chk(arg(1))) + arg(2))
		return w, 0
	case "amalgamate":
		twoAccounts()
		w[chk(arg(0))], w[sav(arg(0))] = "0", "0"
		w[chk(arg(1))] = str(get(chk(arg(1))) + get(chk(arg(0))) + get(sav(arg(0))))
		return w, 0
	}
	t.Fatalf("unknown function %q", call.function)
	return nil, 0
}

func TestGenerateChainMix(t *testing.T) {
	c, err := GenerateChain(ChainSpec{Accounts: 1000, Blocks: 10, BlockSize: 100, Seed: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, call := range c.calls[len(c.calls)-c.WorkloadTxs:] {
		counts[call.function]++
	}
	// 1,000 draws of five equally likely functions: each within 200 ± 60
	// (more than 4.7 standard deviations).
	for _, fn := range sbModifyMix {
		if n := counts[fn]; n < 140 || n > 260 {
			t.Errorf("%s drawn %d times in %d txs; want about %d", fn, n, c.WorkloadTxs, c.WorkloadTxs/5)
		}
	}
	if len(counts) != len(sbModifyMix) {
		t.Errorf("functions drawn: %v", counts)
	}
}

func TestGenerateChainDeterministic(t *testing.T) {
	spec := ChainSpec{Accounts: 150, Blocks: 3, BlockSize: 7, Seed: 42}
	var progressCalls, lastDone, lastTotal int
	a, err := GenerateChain(spec, func(done, total int) {
		if done <= lastDone || done > total {
			t.Errorf("progress(%d, %d) after (%d, %d)", done, total, lastDone, lastTotal)
		}
		progressCalls, lastDone, lastTotal = progressCalls+1, done, total
	})
	if err != nil {
		t.Fatal(err)
	}
	if wantTotal := 2 + 21 + 4; lastDone != wantTotal || lastTotal != wantTotal {
		t.Errorf("last progress (%d, %d), want (%d, %d)", lastDone, lastTotal, wantTotal, wantTotal)
	}
	b, err := GenerateChain(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.FinalTotal != b.FinalTotal || fmt.Sprint(a.calls) != fmt.Sprint(b.calls) {
		t.Fatalf("two chains from one spec differ in their calls or totals")
	}
	// Keys and certificates are random; everything else is the spec's.
	ta, tb := cgTxs(t, a), cgTxs(t, b)
	for i := range ta {
		ha, hb := ta[i].Payload.Header, tb[i].Payload.Header
		if !bytes.Equal(ha.Nonce, hb.Nonce) || ha.TimestampUnixNano != hb.TimestampUnixNano || !proto.Equal(ta[i].RWSet(), tb[i].RWSet()) {
			t.Fatalf("tx %d differs between two chains of one spec", i)
		}
	}
	spec.Seed++
	c, err := GenerateChain(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a.calls) == fmt.Sprint(c.calls) {
		t.Errorf("seeds %d and %d made the same calls", spec.Seed-1, spec.Seed)
	}
}

func cgTxs(t *testing.T, c *Chain) []*api.Tx {
	var txs []*api.Tx
	for _, b := range cgDecode(t, c) {
		txs = append(txs, b.txs...)
	}
	return txs
}

func TestChainSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		spec ChainSpec
		ok   bool
	}{
		{ChainSpec{}, true}, // all defaults
		{ChainSpec{Accounts: 2, Blocks: 1, BlockSize: 1}, true},
		{ChainSpec{Accounts: 39, Blocks: 1, BlockSize: 20}, false},
		{ChainSpec{Accounts: 100, Blocks: -1, BlockSize: 10}, false},
		{ChainSpec{Accounts: 1, Blocks: 1, BlockSize: 1}, false},
	} {
		s := tc.spec
		s.EnsureDefaults()
		if err := s.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: Validate() = %v, want ok=%v", s, err, tc.ok)
		}
	}
	if _, err := GenerateChain(ChainSpec{Accounts: 10, Blocks: 1, BlockSize: 6}, nil); err == nil {
		t.Error("GenerateChain accepted 10 accounts for blocks of 6 txs")
	}
}

// TestGenerateChainTight fills every block with as many txs as Validate
// allows (Accounts = 2×BlockSize), the hardest case for redrawing.
func TestGenerateChainTight(t *testing.T) {
	c, err := GenerateChain(ChainSpec{Accounts: 20, Blocks: 20, BlockSize: 10, Seed: 9, Alg: identity.Ed25519}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for n, b := range cgDecode(t, c)[c.SetupBlocks:] {
		keys := map[string]bool{}
		for i, tx := range b.txs {
			for _, k := range cgTxKeys(tx.RWSet().Namespaces[0]) {
				if keys[k] {
					t.Fatalf("workload block %d tx %d touches %q again", n, i, k)
				}
				keys[k] = true
			}
		}
	}
}

func BenchmarkGenerateChain(b *testing.B) {
	for _, tc := range []struct {
		name string
		spec ChainSpec
	}{
		{"ecdsa-p256/1k-accounts", ChainSpec{Accounts: 1000, Blocks: 10, BlockSize: 100}},
		{"ed25519/1k-accounts", ChainSpec{Accounts: 1000, Blocks: 10, BlockSize: 100, Alg: identity.Ed25519}},
		{"ecdsa-p256/default", ChainSpec{}}, // 10,000 accounts, 100 blocks of 100 txs
	} {
		b.Run(tc.name, func(b *testing.B) {
			var c *Chain
			for b.Loop() {
				var err error
				if c, err = GenerateChain(tc.spec, nil); err != nil {
					b.Fatal(err)
				}
			}
			size := 0
			for _, blk := range c.Blocks {
				size += len(blk)
			}
			b.ReportMetric(float64(b.N*c.WorkloadTxs)/b.Elapsed().Seconds(), "workload-tx/s")
			b.ReportMetric(float64(size)/float64(len(c.Blocks)), "B/block")
		})
	}
}
