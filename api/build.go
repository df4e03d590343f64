package api

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// Signer is anything that can sign as an identity (identity.Signer is one).
type Signer interface {
	Identity() *Identity
	Sign(msg []byte) ([]byte, error)
}

// TxSpec describes a transaction to build: what the client proposed and
// what the simulation produced.
type TxSpec struct {
	Channel   string
	Contract  string
	Function  string
	Args      [][]byte
	Nonce     []byte // required; the tx id derives from it
	Timestamp int64  // unix nanoseconds
	RWSet     *RWSet
	Result    []byte
	Event     *Event
}

// BuildTx builds and signs a transaction exactly as the validator checks
// it: the creator signs the TxPayload bytes, each endorser the
// ResponsePayload bytes. It returns the Transaction's bytes and its tx id.
func BuildTx(spec TxSpec, creator Signer, endorsers []Signer) ([]byte, string, error) {
	hdr := &TxHeader{
		Channel: spec.Channel, Creator: creator.Identity(), Nonce: spec.Nonce,
		TimestampUnixNano: spec.Timestamp,
	}
	hdr.TxId = TxID(spec.Nonce, hdr.Creator)
	prop, err := proto.Marshal(&Proposal{Header: hdr, Contract: spec.Contract, Function: spec.Function, Args: spec.Args})
	if err != nil {
		return nil, "", fmt.Errorf("api: encoding proposal: %w", err)
	}
	resp, err := proto.Marshal(&ResponsePayload{
		ProposalHash: ProposalHash(prop), Contract: spec.Contract, Rwset: spec.RWSet,
		Status: StatusOK, Result: spec.Result, Event: spec.Event, Channel: hdr.Channel, TxId: hdr.TxId,
	})
	if err != nil {
		return nil, "", fmt.Errorf("api: encoding response: %w", err)
	}
	ends := make([]*Endorsement, len(endorsers))
	for i, e := range endorsers {
		sig, err := e.Sign(resp)
		if err != nil {
			return nil, "", fmt.Errorf("api: endorsing: %w", err)
		}
		ends[i] = &Endorsement{Endorser: e.Identity(), Signature: sig}
	}
	return SignTx(&TxPayload{Header: hdr, Contract: spec.Contract, ResponsePayload: resp, Endorsements: ends}, creator)
}

// SignTx encodes a payload and wraps it with the creator's signature.
func SignTx(p *TxPayload, creator Signer) ([]byte, string, error) {
	payload, err := proto.Marshal(p)
	if err != nil {
		return nil, "", fmt.Errorf("api: encoding payload: %w", err)
	}
	sig, err := creator.Sign(payload)
	if err != nil {
		return nil, "", fmt.Errorf("api: signing payload: %w", err)
	}
	raw, err := proto.Marshal(&Transaction{Payload: payload, Signature: sig})
	return raw, p.GetHeader().GetTxId(), err
}

// BuildBlock builds block number n over txs, chained to prevHeaderHash
// (nil for block 0), signed by orderer (unsigned if orderer is nil).
func BuildBlock(n uint64, prevHeaderHash []byte, txs [][]byte, orderer Signer) (*Block, error) {
	b := &Block{
		Header:       &BlockHeader{Number: n, PreviousHash: prevHeaderHash, DataHash: DataHash(txs)},
		Transactions: txs,
		Metadata:     &BlockMetadata{},
	}
	if orderer != nil {
		sig, err := orderer.Sign(HeaderHash(b.Header))
		if err != nil {
			return nil, fmt.Errorf("api: signing block %d: %w", n, err)
		}
		b.Metadata.Signature = &BlockSignature{Signer: orderer.Identity(), Signature: sig}
	}
	return b, nil
}
