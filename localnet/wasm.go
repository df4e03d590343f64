package localnet

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/strand-ledger/strand/contract/external"
	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/node"
)

// writeWasm writes the modules of Spec.Wasm under dir/contracts and makes
// their contracts in ch WebAssembly ones.
func writeWasm(dir string, ch *node.ChannelConfig, modules map[string][]byte) error {
	names := make([]string, 0, len(modules))
	for name := range modules {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		i := contractIndex(ch, name)
		if i < 0 {
			return fmt.Errorf("localnet: Spec.Wasm names contract %q, which the channel does not have (contracts: %v)", name, contractNames(ch))
		}
		rel := filepath.Join("contracts", name+".wasm")
		if err := os.MkdirAll(filepath.Join(dir, "contracts"), 0o755); err != nil {
			return fmt.Errorf("localnet: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), modules[name], 0o644); err != nil {
			return fmt.Errorf("localnet: %w", err)
		}
		c := &ch.Contracts[i]
		c.Runtime, c.Code, c.Hash = node.RuntimeWasm, rel, wasm.Hash(modules[name])
	}
	return nil
}

func contractIndex(ch *node.ChannelConfig, name string) int {
	for i, c := range ch.Contracts {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func contractNames(ch *node.ChannelConfig) []string {
	names := make([]string, len(ch.Contracts))
	for i, c := range ch.Contracts {
		names[i] = c.Name
	}
	return names
}

// writeExternal writes the connection packages of Spec.External under
// dir/contracts and makes their contracts in ch external ones.
func writeExternal(dir string, ch *node.ChannelConfig, packages map[string][]byte) error {
	names := make([]string, 0, len(packages))
	for name := range packages {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		i := contractIndex(ch, name)
		if i < 0 {
			return fmt.Errorf("localnet: Spec.External names contract %q, which the channel does not have (contracts: %v)", name, contractNames(ch))
		}
		rel := filepath.Join("contracts", name+".external.json")
		if err := os.MkdirAll(filepath.Join(dir, "contracts"), 0o755); err != nil {
			return fmt.Errorf("localnet: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), packages[name], 0o644); err != nil {
			return fmt.Errorf("localnet: %w", err)
		}
		c := &ch.Contracts[i]
		c.Runtime, c.Code, c.Hash = node.RuntimeExternal, rel, external.Hash(packages[name])
	}
	return nil
}
