// Package simple is Caliper's "simple" contract: accounts holding one
// balance each, stored under the account's name as signed decimal ASCII.
//
//	open(acct, money)            409 if it exists; money 0 or more
//	query(acct)                  the balance as decimal text; 404 if missing
//	delete(acct)                 404 if missing
//	transfer(src, dst, amount)   404 if either is missing; 400 if src == dst,
//	                             amount < 1 or src holds less than amount
//
// Money is conserved by transfer; open and delete create and destroy it.
package simple
