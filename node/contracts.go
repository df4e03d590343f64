package node

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contract/wasm"
)

// ErrCodeHash is a channel's WebAssembly contract whose module file has
// another SHA-256 than the channel says.
var ErrCodeHash = errors.New("node: contract code hash mismatch")

// channelContracts instantiates the contracts the channel defines: the
// built-in ones by name, the WebAssembly ones from their module files,
// each checked against the channel's hash and compiled by engine.
func channelContracts(ch *ChannelConfig, engine *wasm.Engine) (map[string]contract.Contract, error) {
	out := map[string]contract.Contract{}
	for _, c := range ch.Contracts {
		if c.Runtime == RuntimeWasm {
			m, err := wasmContract(ch.Channel, c, engine)
			if err != nil {
				return nil, err
			}
			out[c.Name] = m
			continue
		}
		newContract, ok := Builtins[c.Name]
		if !ok {
			known := make([]string, 0, len(Builtins))
			for name := range Builtins {
				known = append(known, name)
			}
			sort.Strings(known)
			return nil, fmt.Errorf("node: channel %q defines contract %q, which this binary does not have (built in: %s; or give it runtime: wasm, code and hash)",
				ch.Channel, c.Name, strings.Join(known, ", "))
		}
		out[c.Name] = newContract()
	}
	return out, nil
}

func wasmContract(channel string, c ContractConfig, engine *wasm.Engine) (*wasm.Module, error) {
	code, err := os.ReadFile(c.Code)
	if err != nil {
		return nil, fmt.Errorf("node: channel %q contract %q: reading its module: %w", channel, c.Name, err)
	}
	if got := wasm.Hash(code); got != c.Hash {
		return nil, fmt.Errorf("%w: channel %q contract %q: module %s has sha256 %s, the channel says %s: every peer must run the code the channel names",
			ErrCodeHash, channel, c.Name, c.Code, got, c.Hash)
	}
	m, err := engine.Compile(code)
	if err != nil {
		return nil, fmt.Errorf("node: channel %q contract %q (%s): %w", channel, c.Name, c.Code, err)
	}
	return m, nil
}
