package node

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/strand-ledger/strand/endorser"
	"github.com/strand-ledger/strand/gateway"

	"github.com/strand-ledger/strand/contract"
	"github.com/strand-ledger/strand/contract/external"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/contract/wasm"
	"github.com/strand-ledger/strand/contracts/empty"
	"github.com/strand-ledger/strand/contracts/fixedasset"
	"github.com/strand-ledger/strand/contracts/kmeans"
	"github.com/strand-ledger/strand/contracts/kv"
	"github.com/strand-ledger/strand/contracts/scm"
	"github.com/strand-ledger/strand/contracts/simple"
	"github.com/strand-ledger/strand/contracts/smallbank"
	"github.com/strand-ledger/strand/ledger/statedb"
)

// Errors a peer gives for a defined contract it cannot run. The
// definition stays in force on the channel (other peers may run it);
// this peer refuses to endorse it, naming why.
var (
	// ErrCodeHash is code whose SHA-256 is not the one its definition
	// (or the channel file) names.
	ErrCodeHash = errors.New("node: contract code hash mismatch")
	// ErrCodeUnavailable is a definition this peer cannot run: a
	// built-in contract this binary lacks, a module missing from state or
	// one that does not compile.
	ErrCodeUnavailable = errors.New("node: contract code unavailable")
)

// DefaultBuiltins returns the contracts compiled into strand.
func DefaultBuiltins() *contract.Builtins {
	return contract.NewBuiltins(map[string]func() contract.Contract{
		smallbank.Name:  smallbank.New,
		kv.Name:         kv.New,
		fixedasset.Name: fixedasset.New,
		simple.Name:     simple.New,
		kmeans.Name:     kmeans.New,
		scm.Name:        scm.New,
		empty.Name:      empty.New,
	})
}

// channelContracts instantiates the contracts the channel file defines
// (the genesis definitions): the built-in ones by name, the WebAssembly
// ones from their module files, each checked against the channel's hash
// and compiled by engine.
func channelContracts(ch *ChannelConfig, builtins *contract.Builtins, engine *wasm.Engine, ext *external.Runtime) (map[string]contract.Contract, error) {
	out := map[string]contract.Contract{}
	for _, c := range ch.Contracts {
		if c.Runtime == RuntimeExternal {
			x, err := externalContract(ch.Channel, c, ext)
			if err != nil {
				return nil, err
			}
			out[c.Name] = x
			continue
		}
		if c.Runtime == RuntimeWasm {
			m, err := wasmContract(ch.Channel, c, engine)
			if err != nil {
				return nil, err
			}
			out[c.Name] = m
			continue
		}
		ct, ok := builtins.New(c.Name)
		if !ok {
			return nil, fmt.Errorf("node: channel %q defines contract %q, which this binary does not have (built in: %s; or give it runtime: wasm, code and hash)",
				ch.Channel, c.Name, strings.Join(builtins.Names(), ", "))
		}
		out[c.Name] = ct
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

func externalContract(channel string, c ContractConfig, ext *external.Runtime) (*external.Contract, error) {
	if ext == nil {
		return nil, fmt.Errorf("%w: channel %q contract %q has runtime external, which this node does not run", ErrCodeUnavailable, channel, c.Name)
	}
	raw, err := os.ReadFile(c.Code)
	if err != nil {
		return nil, fmt.Errorf("node: channel %q contract %q: reading its connection package: %w", channel, c.Name, err)
	}
	if got := external.Hash(raw); got != c.Hash {
		return nil, fmt.Errorf("%w: channel %q contract %q: connection package %s has sha256 %s, the channel says %s: every peer must dial the server the channel names",
			ErrCodeHash, channel, c.Name, c.Code, got, c.Hash)
	}
	x, err := ext.Contract(c.Name, raw)
	if err != nil {
		return nil, fmt.Errorf("node: channel %q contract %q (%s): %w", channel, c.Name, c.Code, err)
	}
	return x, nil
}

// stateGetter is what contractLoader reads modules from.
type stateGetter interface {
	Get(ns, key string) (statedb.Value, bool, error)
}

// contractLoader turns the channel's definitions (committer.Definitions
// on a peer, the memory node's on a compute node: computeDefinitions)
// into the contracts the endorser runs. It keeps the contract of a
// definition it already loaded (the same bytes), so a new definition of
// one contract leaves the others' instances (and pooled wasm instances)
// alone.
type contractLoader struct {
	channel  string
	builtins *contract.Builtins
	engine   *wasm.Engine
	external *external.Runtime // nil: runtime external refused
	state    stateGetter
	genesis  map[string]contract.Contract // from the channel file
	system   contract.Contract            // lifecycleContract, under lifecycle.Namespace
	log      *slog.Logger

	mu     sync.Mutex
	loaded map[string]loadedContract
}

type loadedContract struct {
	def *lifecycle.Definition
	c   contract.Contract
}

// load returns the contracts of t and their definitions
// (endorser.SetDefinitions): each one's sequence and the version of its
// record that the contract's endorsed calls read (lifecycle.Bind), taken
// from t itself, the table the contracts are built from, never from the
// state, which the committer may already have moved past t. A definition this peer cannot run becomes a
// contract that refuses every call with the reason (ErrCodeHash,
// ErrCodeUnavailable); load itself does not fail.
func (l *contractLoader) load(t *lifecycle.Table) (map[string]contract.Contract, map[string]endorser.Definition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loaded == nil {
		l.loaded = map[string]loadedContract{}
	}
	out := make(map[string]contract.Contract, t.Len()+1)
	defs := make(map[string]endorser.Definition, t.Len())
	if l.system != nil {
		out[lifecycle.Namespace] = l.system
	}
	for _, name := range t.Names() {
		e, _ := t.Get(name)
		if e.Def == nil {
			if c := l.genesis[name]; c != nil {
				out[name], defs[name] = c, endorser.Definition{Sequence: e.Sequence} // no record: its read finds none
			}
			continue
		}
		defs[name] = endorser.Definition{Sequence: e.Sequence, At: e.Def.At}
		if prev, ok := l.loaded[name]; ok && (prev.def == e.Def || bytes.Equal(prev.def.Raw, e.Def.Raw)) {
			out[name] = prev.c
			continue
		}
		c, err := l.define(e.Def)
		if err == nil && e.Def.Init != "" {
			c = newInitGuard(c, name, e.Def.Init, e.Def.Sequence)
		}
		if err != nil {
			l.log.Error("a defined contract cannot run on this peer; it refuses to endorse it", "contract", name, "sequence", e.Sequence, "err", err)
			c = refusing{err: err}
		} else {
			l.log.Info("contract defined", "contract", name, "version", e.Def.Version, "sequence", e.Sequence, "runtime", e.Def.Runtime)
		}
		l.loaded[name] = loadedContract{def: e.Def, c: c}
		out[name] = c
	}
	return out, defs
}

// define returns the code of one definition.
func (l *contractLoader) define(d *lifecycle.Definition) (contract.Contract, error) {
	what := fmt.Sprintf("channel %q contract %q version %q (sequence %d)", l.channel, d.Name, d.Version, d.Sequence)
	switch d.Runtime {
	case lifecycle.RuntimeBuiltin:
		c, ok := l.builtins.New(d.Name)
		if !ok {
			return nil, fmt.Errorf("%w: %s has runtime builtin, and this binary has no built-in contract of that name (it has: %s)",
				ErrCodeUnavailable, what, strings.Join(l.builtins.Names(), ", "))
		}
		return c, nil
	case lifecycle.RuntimeWasm:
		code, err := l.code(d, "module")
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCodeUnavailable, what, err)
		}
		if got := wasm.Hash(code); got != d.CodeHash {
			return nil, fmt.Errorf("%w: %s: the module stored has sha256 %s, the definition names %s", ErrCodeHash, what, got, d.CodeHash)
		}
		m, err := l.engine.Compile(code)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCodeUnavailable, what, err)
		}
		if m.Hash() != d.CodeHash {
			return nil, fmt.Errorf("%w: %s: the engine compiled code of sha256 %s, the definition names %s", ErrCodeHash, what, m.Hash(), d.CodeHash)
		}
		c, err := m.WithFuel(d.Fuel)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCodeUnavailable, what, err)
		}
		return c, nil
	case lifecycle.RuntimeExternal:
		if l.external == nil {
			return nil, fmt.Errorf("%w: %s has runtime external, which this node does not run", ErrCodeUnavailable, what)
		}
		pkg, err := l.code(d, "connection package")
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCodeUnavailable, what, err)
		}
		if got := external.Hash(pkg); got != d.CodeHash {
			return nil, fmt.Errorf("%w: %s: the connection package stored has sha256 %s, the definition names %s", ErrCodeHash, what, got, d.CodeHash)
		}
		c, err := l.external.Contract(d.Name, pkg)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCodeUnavailable, what, err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("%w: %s has runtime %q, which this peer does not know", ErrCodeUnavailable, what, d.Runtime)
}

// refusing is a defined contract this peer cannot run.
type refusing struct{ err error }

func (r refusing) Invoke(contract.Stub) ([]byte, error) {
	return nil, &contract.Error{Status: 503, Message: r.err.Error()}
}

// definitionInstaller installs the channel's definitions in force into
// the endorser and the gateway.
type definitionInstaller struct {
	mu   sync.Mutex
	last *lifecycle.Table
	// installed is last once the endorser and gateway run it.
	installed *atomic.Pointer[lifecycle.Table]
	defs      func() *lifecycle.Table
	loader    *contractLoader
	e         *endorser.Endorser
	gw        *gateway.Gateway
	log       *slog.Logger
}

// install installs the latest definitions, if they changed. It is called
// once at start and by the committer after each block that changes them
// (committer.OnDefinitions); whatever the interleaving, the last call
// installs the latest table.
func (d *definitionInstaller) install() {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.defs()
	if t == d.last {
		return
	}
	d.last = t
	if err := d.e.SetDefinitions(d.loader.load(t)); err != nil {
		d.log.Error("installing contract definitions in the endorser", "err", err)
	}
	if err := d.gw.SetPolicies(t.Policies()); err != nil {
		d.log.Error("installing contract definitions' policies in the gateway", "err", err)
	}
	d.installed.Store(t)
}

// code reads a definition's code from the state, unpacked
// (lifecycle.UnpackCode).
func (l *contractLoader) code(d *lifecycle.Definition, noun string) ([]byte, error) {
	v, ok, err := l.state.Get(lifecycle.Namespace, lifecycle.CodeKey(d.CodeHash))
	if err != nil || !ok {
		return nil, fmt.Errorf("its %s %s is not in this peer's state (%v)", noun, d.CodeHash, err)
	}
	code, err := lifecycle.UnpackCode(v.Data)
	if err != nil {
		return nil, fmt.Errorf("its %s %s: %w", noun, d.CodeHash, err)
	}
	return code, nil
}
