package api

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// HashSize is the size of every hash in a block header.
const HashSize = sha256.Size

// HeaderHash returns the hash that chains blocks and that the orderer
// signs: SHA-256 over number (8 bytes, big endian), then previous_hash and
// data_hash, each preceded by its length as one byte.
func HeaderHash(h *BlockHeader) []byte {
	var buf [8 + 1 + 64 + 1 + 64]byte
	b := binary.BigEndian.AppendUint64(buf[:0], h.GetNumber())
	b = appendShort(b, h.GetPreviousHash())
	b = appendShort(b, h.GetDataHash())
	sum := sha256.Sum256(b)
	return sum[:]
}

func appendShort(b, field []byte) []byte {
	if len(field) > 255 {
		field = field[:255] // never valid; the hash then simply won't match
	}
	b = append(b, byte(len(field)))
	return append(b, field...)
}

// DataHash returns SHA-256 over the block's transactions, each preceded by
// its length (4 bytes, big endian), so that no two lists hash alike.
func DataHash(txs [][]byte) []byte {
	h := sha256.New()
	var n [4]byte
	for _, tx := range txs {
		binary.BigEndian.PutUint32(n[:], uint32(len(tx)))
		h.Write(n[:])
		h.Write(tx)
	}
	return h.Sum(nil)
}

// TxID returns hex(SHA-256(nonce || org || 0x00 || cert)): a client cannot
// choose a tx id without also choosing the nonce that the creator signs.
func TxID(nonce []byte, creator *Identity) string {
	h := sha256.New()
	h.Write(nonce)
	h.Write([]byte(creator.GetOrg()))
	h.Write([]byte{0})
	h.Write(creator.GetCert())
	return hex.EncodeToString(h.Sum(nil))
}

// ProposalHash is the hash an endorser puts in ResponsePayload.proposal_hash.
func ProposalHash(proposalBytes []byte) []byte {
	sum := sha256.Sum256(proposalBytes)
	return sum[:]
}
