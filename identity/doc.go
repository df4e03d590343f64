// Package identity owns strand's organisations and members: X.509
// certificates that carry a role, the private keys that sign with them, the
// certificate authorities that issue them, and the Registry (Fabric's "MSP
// manager") that turns a wire api.Identity into a validated Member.
//
// A member's role is the single organisational unit (OU) of its certificate
// that names a role: client, peer, orderer or admin. RoleMember exists only
// in policies, where it matches any role; a certificate never carries it.
//
// Invariants:
//   - Validation is deterministic. Registry.Member never reads the wall
//     clock: like Fabric's MSP it verifies the chain as of one second after
//     the leaf's NotBefore, so every peer, and a replay months later, reaches
//     the same verdict. Expiry is the caller's decision: admission points
//     compare Member.NotAfter with their own clock.
//   - Registry.Member caches its verdict, positive and negative, per
//     (org, certificate bytes). The cache is bounded (CacheEntries); when it
//     is full it is dropped and refilled; certificates over MaxCertBytes are
//     refused uncached. A cached hit allocates nothing.
//   - ECDSA signatures are over SHA-256(msg), ASN.1 DER encoded and low-S:
//     Signer.Sign normalises s to at most N/2 and Member.Verify rejects a
//     high-S signature, so a signature has one valid encoding and cannot be
//     malleated. Ed25519 signs msg itself, and every Ed25519 check, single
//     or batched (Batch, Member.VerifyBatch), follows ZIP-215's cofactored
//     rule, not crypto/ed25519's (ed25519.go says why), so a batch decides
//     exactly what single checks decide.
//   - Verification against keys seen before uses precomputed per-key
//     tables (identity/p256, identity/zip215) within a byte budget
//     (keyTables): pinned for the channel's peers, orderers and admins
//     (built at a key's first check, so TLS-only certificates get none),
//     earned by client keys after KeyTablePromoteAfter checks. A table
//     changes the cost of a check, never its answer.
//   - Members and Identities handed out are shared: callers treat them as
//     read-only.
//
// Caller's duties: pass exact signed bytes to Verify (never re-marshal), and
// check Member.NotAfter against a clock where expiry matters.
package identity
