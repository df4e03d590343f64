package bench

// The Smallbank model keeps the committed state of a generated chain: every
// account's checking and savings balance and the version (block, tx) of the
// write that produced it. It decides each generated transaction's read and
// write set, so that a validator replaying the chain in order finds every
// transaction VALID.
//
// Invariants:
//   - A transaction's read set holds every key it writes, at the version of
//     the last write the model applied (all from earlier blocks).
//   - No two transactions of one block touch the same key: a key touched in
//     the current block carries that block's number in its version, and
//     draws that would touch it again are redrawn.
//   - Money changes only through deposit_checking, transact_savings (+amount)
//     and write_check (−amount, Caliper's semantics: no overdraft penalty);
//     send_payment and amalgamate move money between two different accounts.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/strand-ledger/strand/api"
)

// Smallbank contract functions, as they appear in Proposal.function.
const (
	sbFnCreateAccounts  = "create_accounts" // args: first id, count, checking, savings
	sbFnDepositChecking = "deposit_checking"
	sbFnWriteCheck      = "write_check"
	sbFnTransactSavings = "transact_savings"
	sbFnSendPayment     = "send_payment"
	sbFnAmalgamate      = "amalgamate"
)

// sbModifyMix is Caliper's "modify" round: the five writes, uniformly.
var sbModifyMix = [...]string{
	sbFnDepositChecking, sbFnWriteCheck, sbFnTransactSavings,
	sbFnSendPayment, sbFnAmalgamate,
}

const (
	sbMaxAmount    = 200     // amounts are uniform in [1, sbMaxAmount]
	sbMaxRedraws   = 1 << 20 // draws of accounts per transaction before giving up
	sbCheckingInit = 1_000_000
	sbSavingsInit  = 1_000_000
)

var errSbNoFreeAccounts = errors.New("bench: smallbank: no accounts left that this block has not touched")

// sbKeyName returns the state key of key index k: account k/2, checking
// when k is even, savings when odd.
func sbKeyName(k int) string {
	if k%2 == 0 {
		return "checking_" + strconv.Itoa(k/2)
	}
	return "savings_" + strconv.Itoa(k/2)
}

func sbChecking(id int) int { return 2 * id }
func sbSavings(id int) int  { return 2*id + 1 }

// ParseBalance decodes a Smallbank balance value: a signed decimal integer
// in ASCII.
func ParseBalance(v []byte) (int64, error) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bench: smallbank balance %q: want a decimal integer: %w", v, err)
	}
	return n, nil
}

func sbBalance(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

// sbOp is one generated contract call: its function and arguments, the
// read/write set a simulation on the model's state produces, and the net
// change of money it makes.
type sbOp struct {
	function string
	args     [][]byte
	ns       *api.NsRWSet
	delta    int64
}

// sbModel is the committed Smallbank state. Key index k names account k/2's
// checking (k even) or savings (k odd) balance.
type sbModel struct {
	bal      []int64
	verBlock []uint64 // block+1 of the last write; 0 = the key does not exist
	verTx    []uint32
}

func newSbModel(accounts int) *sbModel {
	return &sbModel{
		bal:      make([]int64, 2*accounts),
		verBlock: make([]uint64, 2*accounts),
		verTx:    make([]uint32, 2*accounts),
	}
}

func (m *sbModel) accounts() int { return len(m.bal) / 2 }

// total returns Σ(checking + savings) over the existing accounts.
func (m *sbModel) total() int64 {
	var t int64
	for _, b := range m.bal {
		t += b
	}
	return t
}

// touchedIn reports whether key k was written in block.
func (m *sbModel) touchedIn(k int, block uint64) bool { return m.verBlock[k] == block+1 }

func (m *sbModel) read(k int) *api.KVRead {
	r := &api.KVRead{Key: sbKeyName(k)}
	if m.verBlock[k] != 0 {
		r.Version = &api.Version{Block: m.verBlock[k] - 1, Tx: m.verTx[k]}
	}
	return r
}

// rwset reads keys at their committed versions and then sets them to vals
// at version (block, tx). Reads and writes are sorted by key.
func (m *sbModel) rwset(keys []int, vals []int64, block uint64, tx uint32) *api.NsRWSet {
	ns := &api.NsRWSet{
		Namespace: chainNamespace,
		Reads:     make([]*api.KVRead, len(keys)),
		Writes:    make([]*api.KVWrite, len(keys)),
	}
	for i, k := range keys {
		ns.Reads[i] = m.read(k)
		ns.Writes[i] = &api.KVWrite{Key: ns.Reads[i].Key, Value: sbBalance(vals[i])}
	}
	for i, k := range keys {
		m.bal[k] = vals[i]
		m.verBlock[k] = block + 1
		m.verTx[k] = tx
	}
	sort.Slice(ns.Reads, func(i, j int) bool { return ns.Reads[i].Key < ns.Reads[j].Key })
	sort.Slice(ns.Writes, func(i, j int) bool { return ns.Writes[i].Key < ns.Writes[j].Key })
	return ns
}

// createAccounts creates accounts [first, first+count) with the initial
// balances, reading each key as absent (creation fails if it exists).
func (m *sbModel) createAccounts(first, count int, block uint64, tx uint32) sbOp {
	keys := make([]int, 0, 2*count)
	vals := make([]int64, 0, 2*count)
	for id := first; id < first+count; id++ {
		keys = append(keys, sbChecking(id), sbSavings(id))
		vals = append(vals, sbCheckingInit, sbSavingsInit)
	}
	return sbOp{
		function: sbFnCreateAccounts,
		args:     sbArgs(int64(first), int64(count), sbCheckingInit, sbSavingsInit),
		ns:       m.rwset(keys, vals, block, tx),
		delta:    int64(count) * (sbCheckingInit + sbSavingsInit),
	}
}

// modify draws one transaction of Caliper's modify mix as transaction tx of
// block, on keys no earlier transaction of block touched, and applies it.
func (m *sbModel) modify(rng *rand.Rand, block uint64, tx uint32) (sbOp, error) {
	fn := sbModifyMix[rng.IntN(len(sbModifyMix))]
	amount := int64(1 + rng.IntN(sbMaxAmount))
	n := m.accounts()
	var keys [3]int
	for try := 0; ; try++ {
		if try == sbMaxRedraws {
			return sbOp{}, fmt.Errorf("%w (block %d, tx %d, %d accounts)", errSbNoFreeAccounts, block, tx, n)
		}
		src := rng.IntN(n)
		dst := rng.IntN(n - 1)
		if dst >= src {
			dst++
		}
		ks := keys[:0]
		switch fn {
		case sbFnDepositChecking, sbFnWriteCheck:
			ks = append(ks, sbChecking(src))
		case sbFnTransactSavings:
			ks = append(ks, sbSavings(src))
		case sbFnSendPayment:
			ks = append(ks, sbChecking(src), sbChecking(dst))
		case sbFnAmalgamate:
			ks = append(ks, sbChecking(src), sbSavings(src), sbChecking(dst))
		}
		if m.anyTouchedIn(ks, block) {
			continue
		}
		// The contract refuses a payment above the payer's checking
		// balance (only write_check overdraws), so no block holds one.
		if fn == sbFnSendPayment && m.bal[sbChecking(src)] < amount {
			continue
		}
		return m.apply(fn, src, dst, amount, ks, block, tx), nil
	}
}

func (m *sbModel) anyTouchedIn(keys []int, block uint64) bool {
	for _, k := range keys {
		if m.touchedIn(k, block) {
			return true
		}
	}
	return false
}

// apply computes fn's new balances of keys (in the order modify lists them)
// and writes them.
func (m *sbModel) apply(fn string, src, dst int, amount int64, keys []int, block uint64, tx uint32) sbOp {
	op := sbOp{function: fn}
	var vals []int64
	switch fn {
	case sbFnDepositChecking, sbFnTransactSavings:
		vals = []int64{m.bal[keys[0]] + amount}
		op.args, op.delta = sbArgs(int64(src), amount), amount
	case sbFnWriteCheck:
		vals = []int64{m.bal[keys[0]] - amount}
		op.args, op.delta = sbArgs(int64(src), amount), -amount
	case sbFnSendPayment:
		vals = []int64{m.bal[keys[0]] - amount, m.bal[keys[1]] + amount}
		op.args = sbArgs(int64(src), int64(dst), amount)
	case sbFnAmalgamate:
		vals = []int64{0, 0, m.bal[keys[2]] + m.bal[keys[0]] + m.bal[keys[1]]}
		op.args = sbArgs(int64(src), int64(dst))
	}
	op.ns = m.rwset(keys, vals, block, tx)
	return op
}

func sbArgs(vs ...int64) [][]byte {
	args := make([][]byte, len(vs))
	for i, v := range vs {
		args[i] = strconv.AppendInt(nil, v, 10)
	}
	return args
}

// state returns every existing key's value.
func (m *sbModel) state() map[string][]byte {
	s := make(map[string][]byte, len(m.bal))
	for k, b := range m.bal {
		if m.verBlock[k] != 0 {
			s[sbKeyName(k)] = sbBalance(b)
		}
	}
	return s
}
