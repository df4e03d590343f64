// Package p256 owns precomputed ECDSA P-256 verification for keys seen
// before: a Table of multiples of one public key Q, so that verifying
// u1·G + u2·Q costs two fixed-base multiplications (nistec's own table for
// G, this Table for Q) instead of one fixed-base and one variable-base.
//
// The curve arithmetic is filippo.io/nistec's public P256Point operations
// (SetBytes, Add, Double, Negate, ScalarBaseMult, BytesX); this package adds
// only the table, the signed-window recoding of u2 and the combination.
// Scalar arithmetic mod N is math/big.
//
// Invariants:
//   - Table.Verify gives crypto/ecdsa.VerifyASN1's answer for every input:
//     the same DER parsing (cryptobyte, as the standard library), r and s in
//     [1, N-1], the digest truncated to 32 bytes and reduced mod N, and R
//     rejected when it is the point at infinity or R.x mod N != r. The
//     differential, Wycheproof and fuzz tests hold it to that.
//   - Verification handles public data only and is variable-time. Signing
//     stays with the standard library.
//   - A Table is immutable after NewTable and safe for concurrent use. It
//     holds 2^(w-1)·(256/w+1) points of nistec.P256Point for its width w
//     (96 bytes each with the assembly backend); Size reports its bytes.
//
// Caller's duties: pass a digest (strand uses SHA-256), not the message, and
// keep any extra rule of its own (strand's low-S check) outside.
package p256
