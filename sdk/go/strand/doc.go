// Package strand is the Go SDK for strand's WebAssembly contracts. A
// contract is written against package contract, exactly as a built-in
// one, and served from a module built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o contract.wasm .
//
// whose main package registers it in an init function (a c-shared module
// runs package initialisers, never main):
//
//	func init() { strand.Serve(mycontract.New()) }
//	func main() {}
//
// The package implements the module side of host ABI v1
// (docs/contracts.md): it exports strand_abi_v1 and strand_invoke and
// gives the contract a contract.Stub over the host's imports. Every call
// starts from the memory the module's initialisation left, so package
// variables set during a call are gone at the next one; a contract keeps
// state only in the ledger.
package strand
