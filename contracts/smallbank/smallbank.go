package smallbank

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/strand-ledger/strand/contract"
)

// Name is the contract's name on a channel.
const Name = "smallbank"

// Limits on arguments.
const (
	MaxIDBytes         = 256  // an account id
	MaxNameBytes       = 1024 // an account holder's name
	MaxCreatedAccounts = 1000 // accounts per create_accounts call
)

// New returns the Smallbank contract.
func New() contract.Contract {
	r, err := contract.NewRouter(bank{})
	if err != nil {
		panic(err) // bank's methods are fixed; the tests build this router
	}
	return r
}

// Balance is query's result.
type Balance struct {
	Checking int64 `json:"checking"`
	Savings  int64 `json:"savings"`
}

// bank holds no state: everything lives behind the stub.
type bank struct{}

func (bank) ParamNames() map[string][]string {
	return map[string][]string{
		"CreateAccount":    {"id", "name", "checking", "savings"},
		"CreateAccounts":   {"first", "count", "checking", "savings"},
		"DepositChecking":  {"id", "amount"},
		"WriteCheck":       {"id", "amount"},
		"WriteCheckHstore": {"id", "amount"},
		"TransactSavings":  {"id", "amount"},
		"SendPayment":      {"src", "dst", "amount"},
		"Amalgamate":       {"src", "dst"},
		"Query":            {"id"},
	}
}

func checkingKey(id string) string { return "checking_" + id }
func savingsKey(id string) string  { return "savings_" + id }
func accountKey(id string) string  { return "account_" + id }

// CreateAccount opens account id with the given name and balances.
func (bank) CreateAccount(stub contract.Stub, id, name string, checking, savings int64) error {
	if err := checkID("id", id); err != nil {
		return err
	}
	if len(name) > MaxNameBytes {
		return contract.Errorf("name of account %q is %d bytes: want at most %d", id, len(name), MaxNameBytes)
	}
	return create(stub, id, name, true, checking, savings)
}

// CreateAccounts opens accounts first, first+1, ..., first+count-1 (decimal
// ids) without names, as bench's chain generator sets up Smallbank.
func (bank) CreateAccounts(stub contract.Stub, first int64, count int, checking, savings int64) error {
	if first < 0 {
		return contract.Errorf("first account %d: want 0 or more", first)
	}
	if count < 1 || count > MaxCreatedAccounts {
		return contract.Errorf("count %d: want 1 to %d", count, MaxCreatedAccounts)
	}
	if first > math.MaxInt64-int64(count) {
		return contract.Errorf("accounts %d+%d overflow int64", first, count)
	}
	for id := first; id < first+int64(count); id++ {
		if err := create(stub, strconv.FormatInt(id, 10), "", false, checking, savings); err != nil {
			return err
		}
	}
	return nil
}

func create(stub contract.Stub, id, name string, named bool, checking, savings int64) error {
	if checking < 0 || savings < 0 {
		return contract.Errorf("initial balances of account %q are %d and %d: want 0 or more", id, checking, savings)
	}
	vs, err := stub.GetMultipleStates(checkingKey(id), savingsKey(id))
	if err != nil {
		return err
	}
	if vs[0] != nil || vs[1] != nil {
		return contract.Statusf(409, "account %q already exists", id)
	}
	if err := put(stub, checkingKey(id), checking); err != nil {
		return err
	}
	if err := put(stub, savingsKey(id), savings); err != nil {
		return err
	}
	if named {
		return stub.PutState(accountKey(id), []byte(name))
	}
	return nil
}

// DepositChecking adds amount to id's checking balance.
func (bank) DepositChecking(stub contract.Stub, id string, amount int64) error {
	return addTo(stub, id, checkingKey(id), +1, amount)
}

// WriteCheck takes amount from id's checking balance, which may go below
// zero (Caliper's semantics: no overdraft penalty).
func (bank) WriteCheck(stub contract.Stub, id string, amount int64) error {
	return addTo(stub, id, checkingKey(id), -1, amount)
}

// WriteCheckHstore is H-Store SmallBank's WriteCheck: it takes amount
// from id's checking balance, plus a penalty of 1 when the account's total
// (checking and savings) is below amount, and returns what it took, which
// the benchmark's money invariant needs (the penalty depends on the state
// the transaction read).
func (bank) WriteCheckHstore(stub contract.Stub, id string, amount int64) (int64, error) {
	if err := checkID("id", id); err != nil {
		return 0, err
	}
	if err := checkAmount(amount); err != nil {
		return 0, err
	}
	b, err := get(stub, checkingKey(id), savingsKey(id))
	if err != nil {
		return 0, err
	}
	taken := amount
	if total, err := add(id, b[0], b[1]); err == nil && total < amount {
		taken++
	}
	bal, err := add(id, b[0], -taken)
	if err != nil {
		return 0, err
	}
	return taken, put(stub, checkingKey(id), bal)
}

// TransactSavings adds amount to id's savings balance.
func (bank) TransactSavings(stub contract.Stub, id string, amount int64) error {
	return addTo(stub, id, savingsKey(id), +1, amount)
}

// SendPayment moves amount from src's checking to dst's, and refuses
// (409) when src's checking balance is below amount: H-Store's and
// Cahill's SendPayment aborts on insufficient funds. Only write_check may
// overdraw.
func (bank) SendPayment(stub contract.Stub, src, dst string, amount int64) error {
	if err := checkPair(src, dst); err != nil {
		return err
	}
	if err := checkAmount(amount); err != nil {
		return err
	}
	b, err := get(stub, checkingKey(src), checkingKey(dst))
	if err != nil {
		return err
	}
	if b[0] < amount {
		return &contract.Error{Status: 409, // Conflict; net/http is left out of WebAssembly builds

			Message: fmt.Sprintf("insufficient funds: account %q has %d in checking, the payment is %d; send_payment does not overdraw (write_check may)", src, b[0], amount)}
	}
	srcBal, err1 := add(src, b[0], -amount)
	dstBal, err2 := add(dst, b[1], amount)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if err := put(stub, checkingKey(src), srcBal); err != nil {
		return err
	}
	return put(stub, checkingKey(dst), dstBal)
}

// Amalgamate moves all of src's money (checking and savings) into dst's
// checking balance.
func (bank) Amalgamate(stub contract.Stub, src, dst string) error {
	if err := checkPair(src, dst); err != nil {
		return err
	}
	b, err := get(stub, checkingKey(src), savingsKey(src), checkingKey(dst))
	if err != nil {
		return err
	}
	total, err := add(dst, b[2], b[0])
	if err == nil {
		total, err = add(dst, total, b[1])
	}
	if err != nil {
		return err
	}
	for _, k := range []string{checkingKey(src), savingsKey(src)} {
		if err := put(stub, k, 0); err != nil {
			return err
		}
	}
	return put(stub, checkingKey(dst), total)
}

// Query returns id's balances.
func (bank) Query(stub contract.Stub, id string) (Balance, error) {
	if err := checkID("id", id); err != nil {
		return Balance{}, err
	}
	b, err := get(stub, checkingKey(id), savingsKey(id))
	if err != nil {
		return Balance{}, err
	}
	return Balance{Checking: b[0], Savings: b[1]}, nil
}
