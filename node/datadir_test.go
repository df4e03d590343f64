package node

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestLockDataDir: a second lock on a held data directory fails with
// ErrDataDirInUse naming the directory, the holder's PID and command line
// and the node; once released, the directory can be taken again.
func TestLockDataDir(t *testing.T) {
	dir := t.TempDir()
	l, err := lockDataDir(dir, "peer0.Org1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockDataDir(dir, "peer0.Org1")
	for _, want := range []string{dir + " is held by process " + strconv.Itoa(os.Getpid()) + " (", "is peer0.Org1 already running?"} {
		if !errors.Is(err, ErrDataDirInUse) || !strings.Contains(err.Error(), want) {
			t.Fatalf("second lock: %v, want ErrDataDirInUse containing %q", err, want)
		}
	}
	t.Logf("second lock: %v", err)
	if err := l.release(); err != nil {
		t.Fatal(err)
	}
	l, err = lockDataDir(dir, "peer0.Org1")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l.release()
}
