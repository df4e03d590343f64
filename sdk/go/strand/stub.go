//go:build wasip1

package strand

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/strand-ledger/strand/contract"
)

// scratch receives the host's answers; one that does not fit is taken
// into a buffer of its own. Allocated at initialisation, so it is part of
// the memory every call starts from.
var scratch = make([]byte, 16<<10)

// fetch calls a host function that answers into a buffer and returns a
// copy of the answer, or nil and the host's negative code.
func fetch(call func(dst unsafe.Pointer, cap int32) int32) ([]byte, int32) {
	n := call(ptr(scratch), int32(len(scratch)))
	if n < 0 {
		return nil, n
	}
	b := make([]byte, n)
	if int(n) <= len(scratch) {
		copy(b, scratch[:n])
	} else {
		hostTake(ptr(b), n)
	}
	return b, n
}

// hostError is the message of the host's last refusal (retError).
func hostError() error {
	n := hostTake(nil, 0)
	b := make([]byte, n)
	hostTake(ptr(b), n)
	return errors.New(string(b))
}

func check(rc int32) error {
	if rc == retError {
		return hostError()
	}
	return nil
}

// stub is contract.Stub over the host ABI.
type stub struct {
	fn   string
	args [][]byte
}

var _ contract.Stub = (*stub)(nil)

func newStub() (*stub, error) {
	b, _ := fetch(hostInput)
	items, err := decodeList(b)
	if err != nil || len(items) == 0 {
		return nil, fmt.Errorf("strand sdk: the host's input does not decode (%v)", err)
	}
	return &stub{fn: string(items[0]), args: items[1:]}, nil
}

func (s *stub) Function() string { return s.fn }
func (s *stub) Args() [][]byte   { return s.args }

func (s *stub) TxID() string {
	b, _ := fetch(hostTxID)
	return string(b)
}

func (s *stub) Channel() string {
	b, _ := fetch(hostChannel)
	return string(b)
}

func (s *stub) Creator() contract.Creator {
	b, _ := fetch(hostCreator)
	it, err := decodeList(b)
	if err != nil || len(it) != 4 {
		return contract.Creator{}
	}
	return contract.Creator{Org: string(it[0]), Role: string(it[1]), Name: string(it[2]), Cert: it[3]}
}

func (s *stub) Timestamp() time.Time { return time.Unix(0, hostTimestamp()).UTC() }

func (s *stub) GetState(key string) ([]byte, error) {
	b, rc := fetch(func(dst unsafe.Pointer, cap int32) int32 {
		return hostGet(sptr(key), int32(len(key)), dst, cap)
	})
	switch rc {
	case retAbsent:
		return nil, nil
	case retError:
		return nil, hostError()
	}
	return b, nil
}

func (s *stub) GetMultipleStates(keys ...string) ([][]byte, error) {
	enc := binary.LittleEndian.AppendUint32(nil, uint32(len(keys)))
	for _, k := range keys {
		enc = binary.LittleEndian.AppendUint32(enc, uint32(len(k)))
		enc = append(enc, k...)
	}
	b, rc := fetch(func(dst unsafe.Pointer, cap int32) int32 {
		return hostGetMulti(ptr(enc), int32(len(enc)), dst, cap)
	})
	if rc == retError {
		return nil, hostError()
	}
	vs, err := decodeList(b)
	if err != nil || len(vs) != len(keys) {
		return nil, fmt.Errorf("strand sdk: get_multi of %d keys answered %d values (%v)", len(keys), len(vs), err)
	}
	return vs, nil
}

func (s *stub) PutState(key string, value []byte) error {
	return check(hostPut(sptr(key), int32(len(key)), ptr(value), int32(len(value))))
}

func (s *stub) DelState(key string) error {
	return check(hostDel(sptr(key), int32(len(key))))
}

func (s *stub) GetStateByRange(start, end string, pageSize int, bookmark string) (contract.Page, error) {
	b, rc := fetch(func(dst unsafe.Pointer, cap int32) int32 {
		return hostRange(sptr(start), int32(len(start)), sptr(end), int32(len(end)), sptr(bookmark), int32(len(bookmark)), int32(pageSize), dst, cap)
	})
	if rc == retError {
		return contract.Page{}, hostError()
	}
	it, err := decodeList(b)
	if err != nil || len(it)%2 != 1 {
		return contract.Page{}, fmt.Errorf("strand sdk: range answered %d items, want a bookmark and key-value pairs (%v)", len(it), err)
	}
	p := contract.Page{Bookmark: string(it[0]), KVs: make([]contract.KV, 0, len(it)/2)}
	for i := 1; i < len(it); i += 2 {
		p.KVs = append(p.KVs, contract.KV{Key: string(it[i]), Value: it[i+1]})
	}
	return p, nil
}

func (s *stub) SetEvent(name string, payload []byte) error {
	return check(hostSetEvent(sptr(name), int32(len(name)), ptr(payload), int32(len(payload))))
}

// decodeList decodes the ABI's list encoding; an absent item (length
// 0xFFFFFFFF) is nil, a present one never is.
func decodeList(b []byte) ([][]byte, error) {
	if len(b) < 4 {
		return nil, errors.New("list shorter than its count")
	}
	n := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b))/4 {
		return nil, fmt.Errorf("list of %d items in %d bytes", n, len(b))
	}
	out := make([][]byte, n)
	for i := range out {
		if len(b) < 4 {
			return nil, fmt.Errorf("item %d: truncated length", i)
		}
		l := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if l == 0xFFFFFFFF {
			continue
		}
		if uint64(l) > uint64(len(b)) {
			return nil, fmt.Errorf("item %d: length %d, %d bytes left", i, l, len(b))
		}
		out[i] = b[:l:l]
		b = b[l:]
	}
	return out, nil
}
