package bench

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestSbModelNoOverdraftPayment: the generator draws only what the
// contract endorses, so no send_payment leaves its payer's checking
// below zero, though amalgamate empties accounts and write_check
// overdraws them often in a long run on few accounts.
func TestSbModelNoOverdraftPayment(t *testing.T) {
	const accounts = 8
	m := newSbModel(accounts)
	m.createAccounts(0, accounts, 0, 0)
	// Start every checking account below the largest amount, so payments would
	// often overdraw if they were allowed.
	for id := range accounts {
		m.bal[sbChecking(id)] = 150
	}
	rng := rand.New(rand.NewPCG(1, 2))
	payments := 0
	for block := uint64(1); block <= 2000; block++ {
		op, err := m.modify(rng, block, 0)
		if err != nil {
			t.Fatal(err)
		}
		if op.function != sbFnSendPayment {
			continue
		}
		payments++
		src, err := strconv.Atoi(string(op.args[0]))
		if err != nil {
			t.Fatal(err)
		}
		k := sbChecking(src)
		if m.bal[k] < 0 {
			t.Fatalf("block %d: send_payment %s left the payer's checking at %d", block, op.args, m.bal[k])
		}
	}
	if payments < 100 {
		t.Fatalf("%d payments in 2000 draws; want the mix's fifth", payments)
	}
}
