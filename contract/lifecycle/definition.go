package lifecycle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/policy"
)

// Namespace is the reserved contract and state namespace of definitions.
// Contract names starting with '_' are reserved for the system.
const Namespace = "_lifecycle"

// Runtimes a definition may name.
const (
	RuntimeBuiltin = "builtin"
	RuntimeWasm    = "wasm"
	// RuntimeExternal is a contract server the peers dial (package
	// contract/external); its "code" is the connection package the orgs
	// agreed on (address, the CA pinning the server's certificate).
	RuntimeExternal = "external"
)

// Limits on a definition.
const (
	MaxDefinitionBytes = 16 << 10
	MaxVersionBytes    = 64
	MaxInitBytes       = 128
	MaxFuel            = 1 << 62 // wasm.MaxFuel
	// MaxCodeBytes bounds a module carried by a definition transaction:
	// the transaction must stay under api.MaxTxBytes with its headers,
	// response and admin signatures around it.
	MaxCodeBytes = api.MaxTxBytes - 64<<10
)

// Errors, each naming what the caller got wrong.
var (
	ErrMalformed = errors.New("lifecycle: malformed contract definition")
	ErrRuntime   = errors.New("lifecycle: unknown runtime")
	ErrCodeHash  = errors.New("lifecycle: code hash mismatch")
	ErrSequence  = errors.New("lifecycle: definition sequence out of order")
	ErrPolicy    = errors.New("lifecycle: bad endorsement policy")
)

// Definition is one contract definition. Decode keeps the exact bytes in
// Raw; a Definition is immutable once decoded.
type Definition struct {
	Channel  string `json:"channel"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Sequence uint64 `json:"sequence"`
	Runtime  string `json:"runtime"`
	// CodeHash is the SHA-256 in lowercase hex of the module (wasm) or of
	// the connection package (external); empty for builtin, whose code is
	// the binary's.
	CodeHash string `json:"codeHash,omitempty"`
	// Policy is the endorsement policy, policy.Parse syntax, canonical.
	Policy string `json:"policy"`
	// Init, if set, is the function the deployer calls once after the
	// definition commits (docs/contracts.md).
	Init string `json:"init,omitempty"`
	// Fuel (runtime wasm only) is the budget of one call in fuel units,
	// about one a WebAssembly instruction run (docs/contracts.md, Fuel);
	// 0: the peer's default (wasm.DefaultFuel). Agreed on the channel, so
	// a call that runs out of fuel does so on every endorser.
	Fuel int64 `json:"fuel,omitempty"`

	// Raw is the exact encoding (what admins sign and state stores).
	Raw []byte `json:"-"`
	// Parsed is Policy, parsed.
	Parsed *policy.Policy `json:"-"`
	// At is the version (block, tx) of the transaction that committed
	// this definition, which is the version of its DefKey record in
	// state; nil for one not (yet) committed. Whoever reads definitions
	// from the chain sets it before sharing the definition (the
	// committer's stage 2, ReadDefinitions); endorsers bind each call to
	// it (Bind).
	At *api.Version `json:"-"`
}

// Encode fills d.Raw and d.Parsed from the fields after checking them
// (Check) and returns Raw. The policy is stored in canonical form.
func (d *Definition) Encode() ([]byte, error) {
	p, err := policy.Parse(d.Policy)
	if err != nil {
		return nil, fmt.Errorf("%w: contract %q: %w", ErrPolicy, d.Name, err)
	}
	d.Policy = p.String()
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	d.Raw, d.Parsed = raw, p
	if err := d.check(); err != nil {
		return nil, err
	}
	return raw, nil
}

// Decode decodes and checks a definition's bytes. It is network facing:
// any input gives a definition or an error, never a panic.
func Decode(raw []byte) (*Definition, error) {
	if len(raw) > MaxDefinitionBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(raw), MaxDefinitionBytes)
	}
	d := &Definition{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(d); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the definition", ErrMalformed)
	}
	p, err := policy.Parse(d.Policy)
	if err != nil {
		return nil, fmt.Errorf("%w: contract %q: %w", ErrPolicy, d.Name, err)
	}
	if p.String() != d.Policy {
		return nil, fmt.Errorf("%w: contract %q: policy %q is not in canonical form %q", ErrPolicy, d.Name, d.Policy, p.String())
	}
	d.Raw, d.Parsed = append([]byte(nil), raw...), p
	if err := d.check(); err != nil {
		return nil, err
	}
	return d, nil
}

// check checks the fields that need no channel.
func (d *Definition) check() error {
	switch {
	case d.Channel == "":
		return fmt.Errorf("%w: contract %q: no channel", ErrMalformed, d.Name)
	case CheckName(d.Name) != nil:
		return CheckName(d.Name)
	case d.Version == "" || len(d.Version) > MaxVersionBytes || !printable(d.Version):
		return fmt.Errorf("%w: contract %q: version %q, want 1 to %d printable ASCII bytes", ErrMalformed, d.Name, d.Version, MaxVersionBytes)
	case d.Sequence == 0:
		return fmt.Errorf("%w: contract %q: sequence 0, want 1 for the first definition and one more for each upgrade", ErrSequence, d.Name)
	case len(d.Init) > MaxInitBytes || !printable(d.Init):
		return fmt.Errorf("%w: contract %q: init %q, want at most %d printable ASCII bytes", ErrMalformed, d.Name, d.Init, MaxInitBytes)
	case d.Fuel < 0 || d.Fuel > MaxFuel:
		return fmt.Errorf("%w: contract %q: fuel %d, want 1 to 2^62 units a call (0: the peer's default)", ErrMalformed, d.Name, d.Fuel)
	case d.Fuel != 0 && d.Runtime != RuntimeWasm:
		return fmt.Errorf("%w: contract %q: fuel %d with runtime %q; only a wasm contract is metered", ErrMalformed, d.Name, d.Fuel, d.Runtime)
	}
	switch d.Runtime {
	case RuntimeBuiltin:
		if d.CodeHash != "" {
			return fmt.Errorf("%w: contract %q: runtime builtin with code hash %q; a built-in contract's code is the binary's, leave the hash empty",
				ErrMalformed, d.Name, d.CodeHash)
		}
	case RuntimeWasm, RuntimeExternal:
		if !isHash(d.CodeHash) {
			return fmt.Errorf("%w: contract %q: code hash %q, want the SHA-256 of its %s as 64 lowercase hex digits", ErrMalformed, d.Name, d.CodeHash, codeNoun(d.Runtime))
		}
	default:
		return fmt.Errorf("%w: contract %q: runtime %q, want %s, %s or %s", ErrRuntime, d.Name, d.Runtime, RuntimeBuiltin, RuntimeWasm, RuntimeExternal)
	}
	return nil
}

// HasCode reports whether a definition of runtime carries code in its
// transaction: a module (wasm) or a connection package (external).
func HasCode(runtime string) bool { return runtime == RuntimeWasm || runtime == RuntimeExternal }

// codeNoun names what a runtime's code is.
func codeNoun(runtime string) string {
	if runtime == RuntimeExternal {
		return "connection package"
	}
	return "module"
}

// CheckName checks a contract name a definition may use: a namespace
// (api.CheckNamespace) not starting with '_', which is reserved.
func CheckName(name string) error {
	if err := api.CheckNamespace(name); err != nil {
		return fmt.Errorf("%w: contract name: %v", ErrMalformed, err)
	}
	if strings.HasPrefix(name, "_") {
		return fmt.Errorf("%w: contract name %q starts with '_', which is reserved for system namespaces such as %s", ErrMalformed, name, Namespace)
	}
	return nil
}

// CodeHash returns the SHA-256 of code in lowercase hex.
func CodeHash(code []byte) string {
	sum := sha256.Sum256(code)
	return hex.EncodeToString(sum[:])
}

// DefKey and CodeKey are the state keys of a definition and of a module.
func DefKey(name string) string  { return "def/" + name }
func CodeKey(hash string) string { return "code/" + hash }

// DefPrefix and its end bound the definitions in the namespace.
const (
	DefPrefix = "def/"
	DefEnd    = "def0" // '/'+1
)

func isHash(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
