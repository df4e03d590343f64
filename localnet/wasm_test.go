package localnet

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/node"
)

// TestGenerateWasm: Spec.Wasm writes the module beside the channel file
// and names it there by path and hash.
func TestGenerateWasm(t *testing.T) {
	code := []byte("\x00asm\x01\x00\x00\x00 not run here")
	lay, err := Generate(t.TempDir(), Spec{Wasm: map[string][]byte{"smallbank": code}})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := node.LoadChannel(lay.Channel)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ch.Contracts {
		switch {
		case c.Name == "smallbank" && (c.Runtime != node.RuntimeWasm || c.Hash != wasm.Hash(code) || c.Code != filepath.Join(lay.Dir, "contracts", "smallbank.wasm")):
			t.Errorf("smallbank: %+v, want runtime wasm, hash %s and the module beside the channel file", c, wasm.Hash(code))
		case c.Name != "smallbank" && c.Runtime != "":
			t.Errorf("%s: runtime %q, want built in", c.Name, c.Runtime)
		}
	}
	_, err = Generate(t.TempDir(), Spec{Wasm: map[string][]byte{"bank": code}})
	if err == nil || !strings.Contains(err.Error(), `Spec.Wasm names contract "bank", which the channel does not have`) {
		t.Fatalf("unknown contract: %v", err)
	}
}
