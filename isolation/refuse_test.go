//go:build linux

package isolation

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const refuseEnv = "ISOLATION_REFUSE" // MODE:PARENT

// TestRefuseChild is the process TestOpenRefusesHost starts: it does
// nothing unless started by it. In mode "ro" it first bind-mounts Parent
// read-only over itself (in its own mount namespace); then it opens an
// actuator and prints the error.
func TestRefuseChild(t *testing.T) {
	mode, parent, ok := strings.Cut(os.Getenv(refuseEnv), ":")
	if !ok {
		return
	}
	if mode == "ro" {
		if err := syscall.Mount(parent, parent, "", syscall.MS_BIND, ""); err != nil {
			fmt.Printf("skip bind mount: %v\n", err)
			return
		}
		if err := syscall.Mount("", parent, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			fmt.Printf("skip read-only remount: %v\n", err)
			return
		}
	}
	a, err := Open(ActuatorOptions{Parent: parent, Components: []string{"peer"}})
	if err == nil {
		fmt.Printf("opened %s\n", a.Dir())
		a.Close()
		return
	}
	fmt.Printf("error: %v\n", err)
}

// TestOpenRefusesHost checks, against the real kernel, the two refusals
// that need another process: a user that is not root, and a read-only
// cgroup mount. Each must fail with the parent's path and the cause, and
// leave nothing behind.
func TestOpenRefusesHost(t *testing.T) {
	var kill []*exec.Cmd
	parent := testParent(t, &kill)
	// The test binary, where user nobody can run it.
	dir, err := os.MkdirTemp("", "isolation-refuse-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "isolation.test")
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode string
		attr *syscall.SysProcAttr
		want string
	}{
		{"nobody", &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}},
			parent + ": cannot create this run's cgroup: mkdir " + parent + "/strand-"},
		{"ro", &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS},
			parent + ": cannot create this run's cgroup: mkdir " + parent + "/strand-"},
	} {
		cmd := exec.Command(bin, "-test.run=^TestRefuseChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), refuseEnv+"="+c.mode+":"+parent)
		cmd.SysProcAttr = c.attr
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		got := string(out)
		if strings.HasPrefix(got, "skip") || err != nil && !strings.Contains(got, "error:") {
			t.Logf("%s: cannot run the child here (%v): %s", c.mode, err, got)
			continue
		}
		cause := map[string]string{
			"nobody": "permission denied (not root, and the cgroup is not delegated to uid 65534)",
			"ro":     "read-only file system (the cgroup hierarchy is mounted read-only)",
		}[c.mode]
		if !strings.Contains(got, "error: "+ErrNoCgroup.Error()) || !strings.Contains(got, c.want) || !strings.Contains(got, cause) {
			t.Errorf("%s: child said %q, want ErrNoCgroup naming %q and %q", c.mode, got, c.want, cause)
		}
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			if e.IsDir() {
				t.Errorf("%s: the refused Open left the cgroup %s/%s behind", c.mode, parent, e.Name())
			}
		}
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
