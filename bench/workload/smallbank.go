package workload

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/strand-ledger/strand/contracts/smallbank"
)

// Smallbank mixes (WORKLOADS.md): Caliper's modify round picks the five
// writes uniformly; H-Store adds the balance query.
var smallbankMixes = map[string]string{
	"caliper": "deposit_checking=20,write_check=20,transact_savings=20,send_payment=20,amalgamate=20",
	"hstore":  "amalgamate=15,query=15,deposit_checking=15,send_payment=25,transact_savings=15,write_check=15",
}

var smallbankOps = []string{"deposit_checking", "write_check", "transact_savings", "send_payment", "amalgamate", "query"}

// Smallbank is the Smallbank workload. Its accounts are Base … Base+Accounts-1,
// each created with Balance in checking and in savings.
type Smallbank struct {
	env      Env
	p        *params
	mix      mix
	Accounts int
	Balance  int64
	Base     int64
	query    bool // submit queries (true) or evaluate them
	penalty  bool // write_check is H-Store's, with its penalty
}

func newSmallbank(p *params, env Env) Workload {
	w := &Smallbank{env: env, p: p}
	w.Accounts = p.int("accounts", 1000, 2, 10_000_000)
	w.Balance = int64(p.int("balance", 1_000_000, 0, 1_000_000_000))
	w.mix = p.mix("mix", "caliper", smallbankMixes, smallbankOps...)
	def := "caliper"
	if p.used["mix"] == "hstore" {
		def = "hstore"
	}
	// H-Store's write_check takes 1 more when the account's total is
	// below the amount; Caliper's does not.
	w.penalty = p.choice("write_check", def, "caliper", "hstore") == "hstore"
	w.query = p.submit()
	// Account ids start at a base unique to the run.
	w.Base = env.Run * 10_000_000
	return w
}

func (w *Smallbank) Name() string              { return "smallbank" }
func (w *Smallbank) Contract() string          { return smallbank.Name }
func (w *Smallbank) Params() map[string]string { return w.p.snapshot() }

// InitialTotal is the money in all accounts after setup.
func (w *Smallbank) InitialTotal() int64 { return int64(w.Accounts) * 2 * w.Balance }

// AccountID is the id of account i.
func (w *Smallbank) AccountID(i int) string { return strconv.FormatInt(w.Base+int64(i), 10) }

// Setup creates the accounts, MaxCreatedAccounts per transaction.
func (w *Smallbank) Setup() [][]Op {
	var ops []Op
	bal := strconv.FormatInt(w.Balance, 10)
	for i := 0; i < w.Accounts; i += smallbank.MaxCreatedAccounts {
		n := min(smallbank.MaxCreatedAccounts, w.Accounts-i)
		ops = append(ops, Op{Contract: smallbank.Name, Function: "create_accounts", Submit: true,
			Args: []string{w.AccountID(i), itoa(n), bal, bal}})
	}
	return [][]Op{ops}
}

func (w *Smallbank) Client(id int) Generator {
	r := rng(w.env, id)
	return GeneratorFunc(func() Op { return w.op(r) })
}

// op draws one operation: amounts 1-200 (Caliper), two distinct accounts
// for two-account operations (same-account transfers would create money
// under last-write-wins). Delta is the money it adds if VALID.
func (w *Smallbank) op(r *rand.Rand) Op {
	a := r.IntN(w.Accounts)
	b := r.IntN(w.Accounts - 1)
	if b >= a {
		b++
	}
	amount := int64(1 + r.IntN(200))
	ida, idb, amt := w.AccountID(a), w.AccountID(b), strconv.FormatInt(amount, 10)
	op := Op{Contract: smallbank.Name, Function: w.mix.pick(r), Submit: true}
	switch op.Function {
	case "deposit_checking", "transact_savings":
		op.Args, op.Delta = []string{ida, amt}, amount
	case "write_check":
		op.Args, op.Delta = []string{ida, amt}, -amount
		if w.penalty {
			op.Function, op.Debit = "write_check_hstore", true
		}
	case "send_payment":
		op.Args = []string{ida, idb, amt}
	case "amalgamate":
		op.Args = []string{ida, idb}
	case "query":
		op.Args, op.Submit = []string{ida}, w.query
	}
	return op
}

// SetupSummary says what Setup creates.
func (w *Smallbank) SetupSummary() string { return fmt.Sprintf("created %d accounts", w.Accounts) }
