package smallbank

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/strand-ledger/strand/contract"
)

// checkID returns a 400 error unless id is a usable account id.
func checkID(what, id string) error {
	if id == "" || len(id) > MaxIDBytes {
		return contract.Errorf("%s %q is %d bytes: want 1 to %d", what, clip(id), len(id), MaxIDBytes)
	}
	return nil
}

func checkPair(src, dst string) error {
	if err := checkID("src", src); err != nil {
		return err
	}
	if err := checkID("dst", dst); err != nil {
		return err
	}
	if src == dst {
		return contract.Errorf("src and dst are both account %q: want two different accounts", src)
	}
	return nil
}

func checkAmount(amount int64) error {
	if amount < 1 {
		return contract.Errorf("amount %d: want 1 or more", amount)
	}
	return nil
}

// addTo checks amount and id and adds sign*amount to the balance at key.
func addTo(stub contract.Stub, id, key string, sign, amount int64) error {
	if err := checkID("id", id); err != nil {
		return err
	}
	if err := checkAmount(amount); err != nil {
		return err
	}
	b, err := get(stub, key)
	if err != nil {
		return err
	}
	n, err := add(id, b[0], sign*amount)
	if err != nil {
		return err
	}
	return put(stub, key, n)
}

// get reads balances; a missing one is a 404 naming its account, whose id
// follows the key's "checking_" or "savings_" prefix.
func get(stub contract.Stub, keys ...string) ([]int64, error) {
	vs, err := stub.GetMultipleStates(keys...)
	if err != nil {
		return nil, err
	}
	bs := make([]int64, len(vs))
	for i, v := range vs {
		if v == nil {
			_, acct, _ := strings.Cut(keys[i], "_")
			return nil, contract.Statusf(404, "account %q does not exist (no %s)", acct, keys[i])
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("smallbank: balance %s is %q: want a decimal integer", keys[i], clip(string(v)))
		}
		bs[i] = n
	}
	return bs, nil
}

func put(stub contract.Stub, key string, n int64) error {
	return stub.PutState(key, strconv.AppendInt(nil, n, 10))
}

// add returns bal+delta, or a 400 error naming the account if that
// overflows int64.
func add(id string, bal, delta int64) (int64, error) {
	if (delta > 0 && bal > math.MaxInt64-delta) || (delta < 0 && bal < math.MinInt64-delta) {
		return 0, contract.Errorf("balance %d of account %q %+d overflows int64", bal, id, delta)
	}
	return bal + delta, nil
}

// clip shortens a long value for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
