// Package policy parses and evaluates endorsement policies written in
// Fabric's syntax:
//
//	expr      := AND(expr, ...) | OR(expr, ...) | OutOf(n, expr, ...) | principal
//	principal := 'Org.role' | "Org.role"
//
// The org may contain dots (the role follows the last one); the role is one
// of member, admin, client, peer, orderer, and 'Org.member' matches any role
// of Org. Keywords are case-insensitive; whitespace may appear between any
// two tokens. AND(a, b, ...) is OutOf(len, a, b, ...) and OR(...) is
// OutOf(1, ...).
//
// A policy is parsed once into a flat, immutable node slice; Evaluate then
// walks it with no allocation, so one Policy may be shared by any number of
// goroutines.
//
// Invariants:
//   - Limits: an expression is at most MaxExprBytes bytes, nests operators
//     at most MaxDepth deep, names at most MaxPrincipals principals, and every
//     OutOf has 1 <= n <= its number of sub-expressions. Parse rejects
//     anything else with a *SyntaxError that gives the byte offset.
//   - String returns the canonical form (upper-case AND/OR, OutOf, single
//     quotes, no spaces). It is never longer than the input, and parsing it
//     yields a policy with the same String.
//   - Evaluation follows Fabric's cauthdsl exactly: each signer satisfies at
//     most one principal. OutOf(n, subs...) evaluates every sub in order
//     against a tentative copy of the set of used signers, commits that copy
//     when the sub is satisfied, and is satisfied when at least n subs were.
//     So AND('A.peer', 'A.peer') needs two distinct peers of A.
//
// Caller's duties: pass only signers whose identities and signatures were
// validated, each identity once (Fabric de-duplicates endorsements by
// identity before evaluating). Only the first 64 signers are considered.
package policy
