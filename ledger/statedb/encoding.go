package statedb

import (
	"encoding/binary"
	"fmt"

	"github.com/strand-ledger/strand/api"
)

// Shared on-disk encodings, so that every byte-ordered backend lays out
// state the same way:
//
//	key:   namespace || 0x00 || key      (namespace has no NUL byte)
//	value: block (8 bytes BE) || tx (4 bytes BE) || data
//
// Keys of one namespace are thus contiguous and sorted by key bytes.

// VersionSize is the size of an encoded version.
const VersionSize = 12

// AppendKey appends the encoded form of (ns, key) to dst.
func AppendKey(dst []byte, ns, key string) []byte {
	dst = append(dst, ns...)
	dst = append(dst, 0)
	return append(dst, key...)
}

// CheckNamespace reports ErrBadNamespace unless ns is 1-128 bytes with no
// NUL byte.
func CheckNamespace(ns string) error {
	if err := api.CheckNamespace(ns); err != nil {
		return fmt.Errorf("%w: %v", ErrBadNamespace, err)
	}
	return nil
}

// SplitKey splits an encoded key into namespace and key.
func SplitKey(enc []byte) (ns, key string, err error) {
	for i, c := range enc {
		if c == 0 {
			return string(enc[:i]), string(enc[i+1:]), nil
		}
	}
	return "", "", fmt.Errorf("%w: encoded key %q has no namespace separator", ErrCorrupt, enc)
}

// AppendValue appends the encoded form of v to dst.
func AppendValue(dst []byte, v Value) []byte {
	dst = binary.BigEndian.AppendUint64(dst, v.Version.Block)
	dst = binary.BigEndian.AppendUint32(dst, v.Version.Tx)
	return append(dst, v.Data...)
}

// DecodeValue decodes an encoded value, copying its data.
func DecodeValue(enc []byte) (Value, error) {
	if len(enc) < VersionSize {
		return Value{}, fmt.Errorf("%w: encoded value of %d bytes, want at least %d", ErrCorrupt, len(enc), VersionSize)
	}
	v := Value{Version: Version{Block: beUint64(enc), Tx: beUint32(enc[8:])}}
	v.Data = append([]byte(nil), enc[VersionSize:]...)
	return v, nil
}

func beUint64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func beUint32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
