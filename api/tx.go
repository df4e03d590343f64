package api

import (
	"fmt"
	"strings"
)

// Tx is a transaction decoded once where it enters a node, kept beside its
// exact bytes. Its bytes fields alias Raw (see decode.go); neither Raw nor
// the fields may be modified after DecodeTx.
type Tx struct {
	Raw      []byte // the Transaction's bytes as they appear in the block
	Envelope *Transaction
	Payload  *TxPayload
	Response *ResponsePayload
}

// ID returns the transaction id from the header.
func (t *Tx) ID() string { return t.Payload.GetHeader().GetTxId() }

// Creator returns the identity that signed the transaction.
func (t *Tx) Creator() *Identity { return t.Payload.GetHeader().GetCreator() }

// RWSet returns the read/write set the endorsers signed.
func (t *Tx) RWSet() *RWSet { return t.Response.GetRwset() }

// StatusOK is the simulation status of a successful contract call.
const StatusOK = 200

// DecodeTx decodes a transaction and checks its structure: everything that
// needs no key, no state and no configuration. On failure it returns the
// validation code that names the problem and an error that explains it; the
// returned Tx then holds whatever was decoded (at least Raw).
func DecodeTx(raw []byte) (*Tx, TxValidationCode, error) {
	t := &Tx{Raw: raw}
	if len(raw) == 0 {
		return t, TxValidationCode_NIL_ENVELOPE, fmt.Errorf("api: empty transaction envelope")
	}
	var err error
	if t.Envelope, err = decodeTransaction(raw); err != nil {
		return t, TxValidationCode_BAD_PAYLOAD, fmt.Errorf("api: transaction envelope: %w", err)
	}
	if len(t.Envelope.Payload) == 0 {
		return t, TxValidationCode_BAD_PAYLOAD, fmt.Errorf("api: transaction has an empty payload")
	}
	if len(t.Envelope.Signature) == 0 {
		return t, TxValidationCode_BAD_CREATOR_SIGNATURE, fmt.Errorf("api: transaction has no creator signature")
	}
	if t.Payload, err = DecodeTxPayload(t.Envelope.Payload); err != nil {
		return t, TxValidationCode_BAD_PAYLOAD, fmt.Errorf("api: transaction payload: %w", err)
	}
	if code, err := checkHeader(t.Payload.Header); err != nil {
		return t, code, err
	}
	if t.Payload.Contract == "" {
		return t, TxValidationCode_INVALID_CHAINCODE, fmt.Errorf("api: transaction %s names no contract", t.ID())
	}
	if t.Response, err = DecodeResponsePayload(t.Payload.ResponsePayload); err != nil {
		t.Response = new(ResponsePayload)
		return t, TxValidationCode_BAD_RESPONSE_PAYLOAD, fmt.Errorf("api: transaction %s: response payload: %w", t.ID(), err)
	}
	if t.Response.Contract != t.Payload.Contract {
		return t, TxValidationCode_BAD_RESPONSE_PAYLOAD, fmt.Errorf("api: transaction %s: response is for contract %q, transaction for %q",
			t.ID(), t.Response.Contract, t.Payload.Contract)
	}
	if t.Response.Status != StatusOK {
		return t, TxValidationCode_BAD_RESPONSE_PAYLOAD, fmt.Errorf("api: transaction %s: simulation status %d (%s), want %d",
			t.ID(), t.Response.Status, t.Response.Message, StatusOK)
	}
	if code, err := checkRWSet(t.ID(), t.Payload.Contract, t.Response.Rwset); err != nil {
		return t, code, err
	}
	return t, TxValidationCode_VALID, nil
}

func checkHeader(h *TxHeader) (TxValidationCode, error) {
	switch {
	case h == nil:
		return TxValidationCode_BAD_COMMON_HEADER, fmt.Errorf("api: transaction has no header")
	case h.Channel == "":
		return TxValidationCode_BAD_CHANNEL_HEADER, fmt.Errorf("api: transaction header names no channel")
	case h.Creator == nil || h.Creator.Org == "" || len(h.Creator.Cert) == 0:
		return TxValidationCode_BAD_COMMON_HEADER, fmt.Errorf("api: transaction header has no creator (org and certificate required)")
	case len(h.Nonce) == 0:
		return TxValidationCode_BAD_COMMON_HEADER, fmt.Errorf("api: transaction header has an empty nonce")
	}
	if want := TxID(h.Nonce, h.Creator); h.TxId != want {
		return TxValidationCode_BAD_PROPOSAL_TXID, fmt.Errorf("api: tx id %q does not match its nonce and creator (want %s)", h.TxId, want)
	}
	return TxValidationCode_VALID, nil
}

// checkRWSet enforces: namespaces are valid and unique, and writes go only
// to the transaction's own contract namespace.
func checkRWSet(txID, contract string, rw *RWSet) (TxValidationCode, error) {
	if rw == nil {
		return TxValidationCode_BAD_RWSET, fmt.Errorf("api: transaction %s has no read/write set", txID)
	}
	for i, ns := range rw.Namespaces {
		if err := CheckNamespace(ns.Namespace); err != nil {
			return TxValidationCode_BAD_RWSET, fmt.Errorf("api: transaction %s: %w", txID, err)
		}
		for _, prev := range rw.Namespaces[:i] {
			if prev.Namespace == ns.Namespace {
				return TxValidationCode_BAD_RWSET, fmt.Errorf("api: transaction %s: namespace %q appears twice in its read/write set", txID, ns.Namespace)
			}
		}
		if len(ns.Writes) > 0 && ns.Namespace != contract {
			return TxValidationCode_ILLEGAL_WRITESET, fmt.Errorf("api: transaction %s of contract %q writes to namespace %q; a contract may write only its own namespace",
				txID, contract, ns.Namespace)
		}
	}
	return TxValidationCode_VALID, nil
}

// TxIDCounts reports whether a transaction that got code has used up its
// tx id, so that any later transaction with the same id is DUPLICATE_TXID.
// It is true exactly when the creator's signature was verified: the codes
// below are the ones decided before (or by) that check, and DUPLICATE_TXID
// itself never claims the id. The committer and the block store's index
// (also when it is rebuilt from the blocks) both use this one rule, so that
// every peer derives the same set of used ids from the same chain, and
// nobody can burn another client's tx id with a transaction they could not
// sign.
func TxIDCounts(code TxValidationCode) bool {
	switch code {
	case TxValidationCode_NIL_ENVELOPE, TxValidationCode_BAD_PAYLOAD, TxValidationCode_BAD_COMMON_HEADER,
		TxValidationCode_BAD_CHANNEL_HEADER, TxValidationCode_BAD_PROPOSAL_TXID, TxValidationCode_TARGET_CHAIN_NOT_FOUND,
		TxValidationCode_BAD_CREATOR_SIGNATURE, TxValidationCode_DUPLICATE_TXID, TxValidationCode_NOT_VALIDATED:
		return false
	}
	return true
}

// CheckNamespace reports whether name can be a contract namespace: 1 to
// 128 bytes, no NUL byte (state databases use NUL as the separator between
// namespace and key).
func CheckNamespace(name string) error {
	if name == "" || len(name) > 128 || strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("api: invalid namespace %q: want 1 to 128 bytes with no NUL byte", name)
	}
	return nil
}
