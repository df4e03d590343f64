package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Engine compiles and runs contract modules. Its compiled modules are
// cached by the SHA-256 of their code, so a module compiles once however
// many channels or contracts name it. An Engine is safe for concurrent use.
type Engine struct {
	opts  Options
	rt    wazero.Runtime
	cache wazero.CompilationCache // nil: no CacheDir
	m     counters

	mu struct {
		sync.Mutex
		modules map[[32]byte]*Module
		closed  bool
	}
}

// NewEngine returns an Engine with opts (zero fields defaulted).
func NewEngine(opts Options) (*Engine, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfig()
	if opts.Interpreter {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	// Metering moves the code (fuel.go), so a module's DWARF would name
	// wrong lines; errors keep only wazero's first line anyway.
	// The call deadline closes the instance (WithCloseOnContextDone).
	cfg = cfg.WithCloseOnContextDone(true).WithMemoryLimitPages(opts.MemoryPages).WithDebugInfoEnabled(false)
	var cache wazero.CompilationCache
	if opts.CacheDir != "" && !opts.Interpreter {
		var err error
		if cache, err = openCache(opts.CacheDir); err != nil {
			return nil, err
		}
		cfg = cfg.WithCompilationCache(cache)
	}
	e := &Engine{opts: opts, rt: wazero.NewRuntimeWithConfig(ctx, cfg), cache: cache}
	e.mu.modules = map[[32]byte]*Module{}
	for name, fns := range map[string][]hostFunc{HostModule: hostFuncs, WASIModule: wasiFuncs} {
		b := e.rt.NewHostModuleBuilder(name)
		for _, f := range fns {
			b.NewFunctionBuilder().WithGoModuleFunction(f.goFunc(), f.params, f.results).Export(f.name)
		}
		if _, err := b.Instantiate(ctx); err != nil {
			e.Close()
			return nil, fmt.Errorf("wasm: defining host module %q: %w", name, err)
		}
	}
	return e, nil
}

// Options returns the engine's options, defaults filled in.
func (e *Engine) Options() Options { return e.opts }

// Close releases every module and instance. Calls running on them fail.
func (e *Engine) Close() error {
	e.mu.Lock()
	e.mu.closed = true
	e.mu.modules = nil
	e.mu.Unlock()
	err := e.rt.Close(context.Background())
	if e.cache != nil {
		err = errors.Join(err, e.cache.Close(context.Background()))
	}
	return err
}

// Hash is the hex SHA-256 of code: what a channel names a module by.
func Hash(code []byte) string {
	sum := sha256.Sum256(code)
	return hex.EncodeToString(sum[:])
}

// Compile returns the module of code, compiling it unless a module with
// the same hash is cached. It checks the module's imports and exports
// against the ABI and runs its initialisation once, so a module that could
// never serve a call fails here, with ErrCompile, ErrMeter, ErrImport or
// ErrABI. What it compiles is code metered for fuel (fuel.go).
func (e *Engine) Compile(code []byte) (*Module, error) {
	hash := sha256.Sum256(code)
	e.mu.Lock()
	if e.mu.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	if m := e.mu.modules[hash]; m != nil {
		e.mu.Unlock()
		e.m.cacheHits.Add(1)
		return m, nil
	}
	e.mu.Unlock()
	// Compile outside the lock: two racing compiles of one code keep
	// the first module to be stored, and the loser's is closed.
	m, err := e.compile(code, hash)
	if err != nil {
		e.m.compileErrors.Add(1)
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return nil, ErrClosed
	}
	if old := e.mu.modules[hash]; old != nil {
		m.close()
		return old, nil
	}
	e.mu.modules[hash] = m
	e.m.compiles.Add(1)
	return m, nil
}

func (e *Engine) compile(code []byte, hash [32]byte) (*Module, error) {
	ctx := context.Background()
	metered, err := meter(code, e.opts.Fuel)
	if err != nil {
		// Name an invalid module as such: meter refuses it only because
		// it cannot read it.
		cm, cerr := e.rt.CompileModule(ctx, code)
		if cerr != nil {
			return nil, fmt.Errorf("%w: %d bytes, sha256 %x: %v", ErrCompile, len(code), hash, cerr)
		}
		cm.Close(ctx)
		return nil, fmt.Errorf("module sha256 %x: %w", hash, err)
	}
	cm, err := e.rt.CompileModule(ctx, metered)
	if err != nil && e.cache != nil && strings.Contains(err.Error(), "compilationcache:") {
		// A cached entry that does not read back (a failed checksum: a
		// damaged disk) is never run: the cache is emptied and the
		// module compiled again.
		if cerr := clearCache(e.opts.CacheDir); cerr == nil {
			cm, err = e.rt.CompileModule(ctx, metered)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %d bytes, sha256 %x: %v", ErrCompile, len(code), hash, err)
	}
	if err := e.check(cm); err != nil {
		cm.Close(ctx)
		return nil, fmt.Errorf("module sha256 %x: %w", hash, err)
	}
	m := &Module{e: e, hash: hash, cm: cm, idle: make(chan *instance, e.opts.Pool), live: make(chan struct{}, e.opts.Pool)}
	in, err := m.instantiate()
	if err != nil {
		cm.Close(ctx)
		return nil, fmt.Errorf("module sha256 %x: %w", hash, err)
	}
	m.snap = in.snap
	if e.opts.CopyOnWrite {
		if m.file, err = newSnapshotFile(m.snap); err == nil {
			in.mapped = in.mapSnapshot(m.file)
		} // else every instance resets by copying, as correct
	}
	m.live <- struct{}{}
	m.idle <- in
	return m, nil
}

// check refuses a module whose imports strand does not provide (by name
// and signature) or that lacks the ABI's exports.
func (e *Engine) check(cm wazero.CompiledModule) error {
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		want, ok := lookupHost(mod, name)
		if !ok {
			return fmt.Errorf("%w: function %s.%s; a contract may import only %s (the host ABI v%d: %s) and %s (deterministic stubs)",
				ErrImport, mod, name, HostModule, ABIVersion, strings.Join(hostNames(), ", "), WASIModule)
		}
		if !sameTypes(f.ParamTypes(), want.params) || !sameTypes(f.ResultTypes(), want.results) {
			return fmt.Errorf("%w: function %s.%s has signature %s, want %s", ErrImport, mod, name,
				signature(f.ParamTypes(), f.ResultTypes()), signature(want.params, want.results))
		}
	}
	for _, m := range cm.ImportedMemories() {
		mod, name, _ := m.Import()
		return fmt.Errorf("%w: memory %s.%s; a contract defines and exports its own memory", ErrImport, mod, name)
	}
	exports := cm.ExportedFunctions()
	for _, want := range []struct {
		name    string
		results []api.ValueType
	}{{ABIExport, nil}, {InvokeExport, []api.ValueType{api.ValueTypeI32}}} {
		f, ok := exports[want.name]
		if !ok {
			return fmt.Errorf("%w: no exported function %q (ABI v%d needs %s: () and %s: () -> i32; exports are %s)",
				ErrABI, want.name, ABIVersion, ABIExport, InvokeExport, exportNames(exports))
		}
		if len(f.ParamTypes()) != 0 || !sameTypes(f.ResultTypes(), want.results) {
			return fmt.Errorf("%w: export %q has signature %s, want %s", ErrABI, want.name,
				signature(f.ParamTypes(), f.ResultTypes()), signature(nil, want.results))
		}
	}
	if _, ok := cm.ExportedMemories()["memory"]; !ok {
		return fmt.Errorf("%w: no exported memory named \"memory\"", ErrABI)
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func signature(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return names(params) + " -> " + names(results)
}

func exportNames(m map[string]api.FunctionDefinition) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
