//go:build wasip1

// Command smallbank is the Smallbank contract (package
// contracts/smallbank, the same code the peer has built in) as a
// WebAssembly module, served by the Go SDK. Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o smallbank.wasm ./examples/smallbank
package main

import (
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/sdk/go/strand"
)

func init() { strand.Serve(smallbank.New()) }

func main() {}
