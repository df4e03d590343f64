package redisdb_test

import (
	"bufio"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/conformance"
	"github.com/strand-ledger/strand/ledger/statedb/redisdb"
)

// startRedis runs a real redis-server on a unix socket in a temporary
// directory (no TCP port, no persistence) until the test ends, and
// returns the socket's path. It returns once the server says it is
// ready. Without redis-server installed the test is skipped, saying so.
func startRedis(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (Debian: apt-get install redis-server); the redis backend is tested against a real server only")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if strings.Contains(strings.ToLower(lines.Text()), "ready to accept connections") {
			go func() { // drain the log, so the server never blocks on it
				for lines.Scan() {
				}
			}()
			return sock
		}
	}
	t.Fatalf("redis-server exited before it was ready: %v", lines.Err())
	return ""
}

func TestConformance(t *testing.T) {
	sock := startRedis(t)
	conformance.Run(t, conformance.Factory{
		Name:       "redis",
		Open:       func(dir string) (statedb.DB, error) { return redisdb.Open(dir, redisdb.Options{Address: sock}) },
		Persistent: true, // while the server runs: the prefix follows the directory
	})
}

func TestOptions(t *testing.T) {
	for _, o := range []redisdb.Options{{}, {Address: "x", Database: 16}} {
		if _, err := redisdb.Open(t.TempDir(), o); !errors.Is(err, redisdb.ErrBadOptions) {
			t.Errorf("Open with %+v: %v; want ErrBadOptions", o, err)
		}
	}
	if _, err := redisdb.Open(t.TempDir(), redisdb.Options{Address: filepath.Join(t.TempDir(), "none.sock")}); !errors.Is(err, statedb.ErrUnavailable) {
		t.Errorf("Open of a server that is not there: %v; want ErrUnavailable", err)
	}
}

func BenchmarkRedis(b *testing.B) {
	sock := startRedis(b)
	conformance.RunBenchmarks(b, conformance.Factory{
		Name: "redis",
		Open: func(dir string) (statedb.DB, error) { return redisdb.Open(dir, redisdb.Options{Address: sock}) },
	})
}
