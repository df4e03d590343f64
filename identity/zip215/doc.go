// Package zip215 owns precomputed Ed25519 verification for keys seen
// before, under ZIP-215's rule: a Table of multiples of −A for one public
// key A, so that the check s·B − k·A costs two table walks (this Table
// for −A, one process-wide table for B) instead of a variable-base
// double-scalar multiplication.
//
// The curve arithmetic is filippo.io/edwards25519's public Point and
// Scalar operations (SetBytes, Add, Subtract, Double, Negate,
// MultByCofactor, Equal, SetCanonicalBytes, SetUniformBytes); this
// package adds only the tables, the signed-window recoding of s and k and
// their combination.
//
// Invariants:
//   - Table.Verify gives ed25519consensus.Verify's answer for every input:
//     a 64-byte signature, s canonical (s < L), A and R decoded by
//     edwards25519's SetBytes (non-canonical encodings of y accepted),
//     k = SHA-512(R ‖ A ‖ msg) mod L over A's bytes as given, and the
//     cofactored equation [8](s·B − k·A − R) = 0. The differential,
//     Wycheproof, ZIP-215 vector and fuzz tests hold it to that.
//   - Recoded scalars are below 2^253 (s canonical, k reduced), so
//     windows(w) signed digits cover them with no carry out; recode
//     panics on a wider one rather than compute a wrong multiple.
//   - Verification handles public data only and is variable-time.
//     Signing stays with the standard library.
//   - A Table is immutable after NewTable and safe for concurrent use. It
//     holds 2^(w-1)·windows(w) edwards25519.Points (160 bytes each) for
//     its width w; Size reports its bytes. The table for B (BaseWindow,
//     640 KiB) is built once per process, on first use.
//
// Caller's duties: pass the message itself (Ed25519 hashes it inside),
// and decide which keys deserve a table (identity's keyTables does).
package zip215
