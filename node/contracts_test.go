package node

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/contract/wasm/wasmtest"
)

// TestWasmContract: a channel file names a WebAssembly contract by path
// and hash; the peer runs it, and refuses a module of another hash by
// name.
func TestWasmContract(t *testing.T) {
	code := wasmtest.C(t, "examples/kv-c/kv.c")
	engine, err := wasm.NewEngine(wasm.Options{CacheDir: wasmtest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	for _, tc := range []struct {
		name, hash string
		want       error
	}{
		{"right hash", wasm.Hash(code), nil},
		{"wrong hash", strings.Repeat("ab", 32), ErrCodeHash},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := strings.Replace(channelYAML, "{name: kv,", "{name: kv, runtime: wasm, code: contracts/kv.wasm, hash: "+tc.hash+",", 1)
			dir := writeNet(t, ch, nodeYAML)
			write(t, filepath.Join(dir, "contracts/kv.wasm"), code)
			cfg, err := LoadChannel(filepath.Join(dir, "channel.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			cs, err := channelContracts(cfg, DefaultBuiltins(), engine, nil)
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), wasm.Hash(code)) || !strings.Contains(err.Error(), `contract "kv"`) {
					t.Fatalf("channelContracts = %v, want %v naming the contract and the file's hash", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := cs["kv"].(*wasm.Module); !ok {
				t.Fatalf("contract kv is %T, want a *wasm.Module", cs["kv"])
			}
			if _, ok := cs["smallbank"].(*wasm.Module); ok {
				t.Fatal("contract smallbank is a wasm module, want the built-in one")
			}
			// The hash is part of the genesis document, the path is not.
			if g := string(cfg.Genesis()); !strings.Contains(g, tc.hash) || strings.Contains(g, "kv.wasm") {
				t.Fatalf("genesis %s: want the hash and not the path", g)
			}
		})
	}
}
