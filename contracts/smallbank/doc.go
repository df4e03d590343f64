// Package smallbank is the Smallbank banking contract (Blockbench,
// Caliper, H-Store), as docs WORKLOADS.md describes it.
//
// State layout (shared with bench's Smallbank model, which generates the
// same read/write sets without running the contract):
//
//	checking_<id>  checking balance, signed decimal ASCII ("1000000")
//	savings_<id>   savings balance, signed decimal ASCII
//	account_<id>   the account holder's name (create_account only)
//
// An account exists when its checking and savings keys do. Each function
// reads exactly the balance keys it writes, the same sets as the model:
//
//	create_account(id, name, checking, savings)  409 if it exists
//	create_accounts(first, count, checking, savings)  ids first..first+count-1, no names
//	deposit_checking(id, amount)    checking += amount
//	write_check(id, amount)         checking -= amount
//	transact_savings(id, amount)    savings += amount
//	send_payment(src, dst, amount)  src.checking -= amount; dst.checking += amount
//	amalgamate(src, dst)            dst.checking += src.checking + src.savings; src zeroed
//	query(id)                       {"checking": n, "savings": n}
//
// Overdrafts follow the original SmallBank (H-Store; Cahill, Röhm and
// Fekete): send_payment aborts (409, nothing written) when src's checking
// balance is below the amount; write_check may take a checking balance
// below zero, with no penalty (Caliper's write_check) or with H-Store's
// penalty of 1 when checking plus savings is below the amount
// (write_check_hstore). Amounts are 1 or more; initial balances 0 or
// more. send_payment and amalgamate need
// two different accounts (400): on one account they would create money
// under last-write-wins. A missing account is 404; a result that would
// overflow int64 is 400.
//
// Invariant: Σ(checking + savings) changes by exactly Σ deposit_checking +
// Σ transact_savings − Σ write_check over successful calls, plus the
// initial balances of created accounts.
package smallbank
