package statedb

import "fmt"

// VersionGetter is an optional capability of a DB: looking up the
// versions of many keys in one call, without their values. MVCC
// validation needs only versions, and a backend that implements it can
// read them in one ordered pass (one iterator, one snapshot) and skip
// copying values. Callers upgrade to it by type assertion and fall back
// to Get.
type VersionGetter interface {
	// GetVersions looks up the version of keys[i] into out[i]; len(out)
	// must equal len(keys) (ErrLengthsMismatch), and every namespace must
	// be valid (ErrBadNamespace). All lookups read one point in time.
	GetVersions(keys []Key, out []VersionResult) error
}

// VersionResult is one answer of GetVersions.
type VersionResult struct {
	Version Version
	Found   bool
}

// DecodeVersion decodes the version at the start of an encoded value
// (AppendValue), without its data.
func DecodeVersion(enc []byte) (Version, error) {
	if len(enc) < VersionSize {
		return Version{}, fmt.Errorf("%w: encoded value of %d bytes, want at least %d", ErrCorrupt, len(enc), VersionSize)
	}
	return Version{Block: beUint64(enc), Tx: beUint32(enc[8:])}, nil
}
