package contract

import (
	"fmt"
	"time"
)

// Stub is a contract call's view of the ledger and of its transaction.
type Stub interface {
	// Function is the name the client called; Args its arguments.
	Function() string
	Args() [][]byte
	// TxID, Channel, Creator and Timestamp describe the transaction.
	TxID() string
	Channel() string
	Creator() Creator
	Timestamp() time.Time

	// GetState returns the value of key, or nil if it does not exist.
	GetState(key string) ([]byte, error)
	// GetMultipleStates returns the values of keys (nil where absent).
	GetMultipleStates(keys ...string) ([][]byte, error)
	// PutState writes key. Keys are 1 to 1024 bytes, values at most 4 MiB.
	PutState(key string, value []byte) error
	// DelState deletes key.
	DelState(key string) error
	// GetStateByRange returns up to pageSize keys (0: no limit) of
	// [start, end) in key order (an empty end: to the end), starting at
	// bookmark if it is not empty. Page.Bookmark is where the next page
	// starts, empty when the range is exhausted.
	GetStateByRange(start, end string, pageSize int, bookmark string) (Page, error)
	// SetEvent sets the transaction's event (the last call wins).
	SetEvent(name string, payload []byte) error
}

// Creator is the identity that signed the proposal.
type Creator struct {
	Org  string
	Role string // client, admin, ...
	Name string // certificate common name
	Cert []byte // DER
}

// KV is one key and value returned by a range query.
type KV struct {
	Key   string
	Value []byte
}

// Page is one page of a range query.
type Page struct {
	KVs      []KV
	Bookmark string
}

// Contract is what a peer runs for a transaction: Invoke dispatches the
// stub's function and returns the result payload. A Router is a Contract.
type Contract interface {
	Invoke(stub Stub) ([]byte, error)
}

// Error is a contract failure with a status for the client (4xx: the
// caller's fault, such as a missing account; 5xx: the contract's). Other
// errors returned by a contract are status 500.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("contract: %s (status %d)", e.Message, e.Status) }

// Errorf returns an *Error with status 400.
func Errorf(format string, args ...any) error {
	return &Error{Status: 400, Message: fmt.Sprintf(format, args...)}
}

// Limits on what a contract may write.
const (
	MaxKeyBytes   = 1024
	MaxValueBytes = 4 << 20
)
