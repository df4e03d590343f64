//go:build wasip1

package strand

import (
	"errors"

	"github.com/strand-ledger/strand/contract"
)

var served contract.Contract

// Serve makes c the module's contract. Call it from an init function of
// the main package; a second call replaces the first.
func Serve(c contract.Contract) { served = c }

// abiV1 declares that the module implements host ABI v1.
//
//go:wasmexport strand_abi_v1
func abiV1() {}

// invoke runs one call: the contract's result goes to the host's result,
// its error to fail (a *contract.Error keeps its status; any other error
// is sent with status 0, which the host reports as a plain error).
//
//go:wasmexport strand_invoke
func invoke() int32 {
	if served == nil {
		fail(500, "the module serves no contract: its main package must call strand.Serve in an init function")
		return 0
	}
	st, err := newStub()
	if err != nil {
		fail(500, err.Error())
		return 0
	}
	res, err := served.Invoke(st)
	if err != nil {
		var ce *contract.Error
		if errors.As(err, &ce) && ce != nil {
			fail(int32(ce.Status), ce.Message)
		} else {
			fail(0, err.Error())
		}
		return 0
	}
	hostResult(ptr(res), int32(len(res)))
	return 0
}

func fail(status int32, msg string) { hostFail(status, sptr(msg), int32(len(msg))) }
