// Package redistest runs a real redis-server for tests: on a unix socket
// in a temporary directory (no TCP port), without persistence, until the
// test ends. Without redis-server installed the test is skipped, saying
// so (Debian: apt-get install redis-server; CI installs it).
package redistest

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Installed reports whether redis-server is on the PATH, for a test that
// covers other backends too and leaves redis out without it.
func Installed() bool {
	_, err := exec.LookPath("redis-server")
	return err == nil
}

// Server is a running redis-server.
type Server struct {
	// Socket is the path of its unix socket: the address to open.
	Socket string
	t      testing.TB
	bin    string
	dir    string
	cmd    *exec.Cmd
}

// Start runs a redis-server until the test ends and returns once it
// accepts connections.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (Debian: apt-get install redis-server); the redis backend is tested against a real server only")
	}
	dir := t.TempDir()
	s := &Server{Socket: filepath.Join(dir, "redis.sock"), t: t, bin: bin, dir: dir}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// Restart kills the server (SIGKILL) and starts a new, empty one on the
// same socket: what a Redis without persistence holds after a crash.
func (s *Server) Restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

func (s *Server) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, "--port", "0", "--unixsocket", s.Socket, "--save", "", "--appendonly", "no", "--dir", s.dir)
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if strings.Contains(strings.ToLower(lines.Text()), "ready to accept connections") {
			go func() { // drain the log, so the server never blocks on it
				for lines.Scan() {
				}
			}()
			return
		}
	}
	s.t.Fatalf("redis-server exited before it was ready: %v", lines.Err())
}

func (s *Server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}
