package simple

import (
	"fmt"
	"math"
	"strconv"

	"github.com/strand-ledger/strand/contract"
)

// Name is the contract's name on a channel.
const Name = "simple"

// MaxAccountBytes bounds an account name.
const MaxAccountBytes = 256

// New returns the simple contract.
func New() contract.Contract {
	r, err := contract.NewRouter(accounts{})
	if err != nil {
		panic(err) // accounts' methods are fixed; the tests build this router
	}
	return r
}

type accounts struct{}

func (accounts) ParamNames() map[string][]string {
	return map[string][]string{
		"Open":     {"acct", "money"},
		"Query":    {"acct"},
		"Delete":   {"acct"},
		"Transfer": {"src", "dst", "amount"},
	}
}

// Open creates acct with money.
func (accounts) Open(stub contract.Stub, acct string, money int64) error {
	if err := checkAcct("acct", acct); err != nil {
		return err
	}
	if money < 0 {
		return contract.Errorf("money %d for account %q: want 0 or more", money, acct)
	}
	v, err := stub.GetState(acct)
	if err != nil {
		return err
	}
	if v != nil {
		return contract.Statusf(409, "account %q already exists", acct)
	}
	return put(stub, acct, money)
}

// Query returns acct's balance.
func (accounts) Query(stub contract.Stub, acct string) (int64, error) {
	if err := checkAcct("acct", acct); err != nil {
		return 0, err
	}
	return get(stub, acct)
}

// Delete removes acct.
func (accounts) Delete(stub contract.Stub, acct string) error {
	if err := checkAcct("acct", acct); err != nil {
		return err
	}
	if _, err := get(stub, acct); err != nil {
		return err
	}
	return stub.DelState(acct)
}

// Transfer moves amount from src to dst.
func (accounts) Transfer(stub contract.Stub, src, dst string, amount int64) error {
	if err := checkAcct("src", src); err != nil {
		return err
	}
	if err := checkAcct("dst", dst); err != nil {
		return err
	}
	if src == dst {
		return contract.Errorf("src and dst are both account %q: want two different accounts", src)
	}
	if amount < 1 {
		return contract.Errorf("amount %d: want 1 or more", amount)
	}
	from, err := get(stub, src)
	if err != nil {
		return err
	}
	to, err := get(stub, dst)
	if err != nil {
		return err
	}
	if from < amount {
		return contract.Errorf("account %q holds %d: cannot transfer %d", src, from, amount)
	}
	if to > math.MaxInt64-amount {
		return contract.Errorf("account %q holds %d: receiving %d overflows int64", dst, to, amount)
	}
	if err := put(stub, src, from-amount); err != nil {
		return err
	}
	return put(stub, dst, to+amount)
}

func checkAcct(what, acct string) error {
	if acct == "" || len(acct) > MaxAccountBytes {
		return contract.Errorf("%s of %d bytes: want 1 to %d", what, len(acct), MaxAccountBytes)
	}
	return nil
}

func get(stub contract.Stub, acct string) (int64, error) {
	v, err := stub.GetState(acct)
	if err != nil {
		return 0, err
	}
	if v == nil {
		return 0, contract.Statusf(404, "account %q does not exist", acct)
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("simple: balance of account %q is %q: want a decimal integer", acct, v)
	}
	return n, nil
}

func put(stub contract.Stub, acct string, n int64) error {
	return stub.PutState(acct, strconv.AppendInt(nil, n, 10))
}
