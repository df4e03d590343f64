// Package wasmtest builds WebAssembly contracts for tests with the real
// toolchains: Go's own (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared) and
// Debian's clang with lld and wasi-libc (--target=wasm32-wasi, the reactor
// model). Each source is built once per test binary.
//
// A missing toolchain skips the test on a developer's machine and fails it
// in CI (CI set), where .ci/run installs clang, lld, wasi-libc and the
// wasm32 compiler-rt builtins.
package wasmtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var built struct {
	sync.Mutex
	code map[string][]byte
	dir  string
}

// Go builds the Go main package at dir (relative to the module root, such
// as "examples/smallbank") into a module.
func Go(t testing.TB, dir string) []byte {
	t.Helper()
	return build(t, "go:"+dir, func(out string) *exec.Cmd {
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./"+dir)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
		return cmd
	})
}

// C builds C sources (relative to the module root) into a reactor module,
// with sdk/c on the include path.
func C(t testing.TB, files ...string) []byte {
	t.Helper()
	need(t, "clang")
	need(t, "wasm-ld")
	return build(t, "c:"+strings.Join(files, ","), func(out string) *exec.Cmd {
		args := append([]string{"--target=wasm32-wasi", "-O2", "-mexec-model=reactor", "-Wall", "-Werror", "-Isdk/c", "-o", out}, files...)
		return exec.Command("clang", args...)
	})
}

func need(t testing.TB, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed: .ci/run installs clang, lld, wasi-libc and libclang-rt-dev-wasm32", tool)
		}
		t.Skipf("%s is not installed (apt-get install clang lld wasi-libc libclang-rt-dev-wasm32)", tool)
	}
}

func build(t testing.TB, key string, command func(out string) *exec.Cmd) []byte {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if code, ok := built.code[key]; ok {
		return code
	}
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if built.dir == "" {
		if built.dir, err = os.MkdirTemp("", "wasmtest"); err != nil {
			t.Fatal(err)
		}
		built.code = map[string][]byte{}
	}
	out := filepath.Join(built.dir, fmt.Sprintf("%d.wasm", len(built.code)))
	cmd := command(out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v: %v\n%s", key, cmd.Args, err, b)
	}
	code, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(out)
	built.code[key] = code
	return code
}

// Root is the module's root directory: the nearest parent of the working
// directory holding go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("wasmtest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// CacheDir is a compilation cache directory (wasm.Options.CacheDir)
// shared by the test processes of this user on this machine, and kept
// between runs: a module compiles once, not once per test and package
// (a Go module takes seconds to compile, tens of seconds under -race).
// Tests of compilation itself should not use it.
func CacheDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("strand-wasmtest-cache-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
