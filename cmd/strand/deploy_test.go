package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unitsDir holds the systemd units of deploy/systemd.
const unitsDir = "../../deploy/systemd"

// TestSystemdUnits checks each unit's command line against this binary's
// commands and flags (a renamed flag breaks the unit, not a server at
// night), and, where systemd-analyze exists, the unit's syntax.
func TestSystemdUnits(t *testing.T) {
	units, err := filepath.Glob(filepath.Join(unitsDir, "strand-*@.service"))
	if err != nil || len(units) != 3 {
		t.Fatalf("units %v (%v): want strand-{orderer,peer,memnode}@.service", units, err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, unit := range units {
		raw, err := os.ReadFile(unit)
		if err != nil {
			t.Fatal(err)
		}
		role := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(unit), "strand-"), "@.service")
		var execStart string
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
				execStart = v
			}
		}
		args := strings.Fields(strings.ReplaceAll(execStart, "%i", "peer0.Org1"))
		if len(args) < 2 || args[0] != "/usr/local/bin/strand" {
			t.Fatalf("%s: ExecStart=%q: want /usr/local/bin/strand and its arguments", unit, execStart)
		}
		cmd, rest, err := rootCmd().Find(args[1:])
		if err != nil {
			t.Fatalf("%s: %v", unit, err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatalf("%s: %q: %v", unit, execStart, err)
		}
		if got := cmd.CommandPath(); got != "strand "+role+" start" || !cmd.Runnable() {
			t.Errorf("%s runs %q, want strand %s start", unit, got, role)
		}
		if cfg := cmd.Flags().Lookup("config"); cfg == nil || cfg.Value.String() != "/etc/strand/nodes/peer0.Org1.yaml" {
			t.Errorf("%s: --config is %v, want /etc/strand/nodes/%%i.yaml", unit, cfg)
		}
		analyze, err := exec.LookPath("systemd-analyze")
		if err != nil {
			continue
		}
		// systemd-analyze checks that ExecStart is executable: point it
		// at this test binary. It exits 0 on values it ignores, so any
		// word on stderr fails the test.
		dir := t.TempDir()
		local := filepath.Join(dir, filepath.Base(unit))
		if err := os.WriteFile(local, bytes.ReplaceAll(raw, []byte("/usr/local/bin/strand"), []byte(self)), 0o644); err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		c := exec.Command(analyze, "verify", strings.Replace(local, "@.service", "@peer0.Org1.service", 1))
		c.Stderr = &stderr
		if err := c.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", unit, err, stderr.String())
		}
	}
}

// TestDockerImage builds the image FROM scratch with deploy/image.sh and
// runs the binary in it: `strand version` and a one-second demo (TLS,
// Pebble and temp dirs, all inside a bare image). It needs a Docker
// daemon, and skips, saying so, where there is none.
func TestDockerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: building an image takes a minute")
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker command: the image is not built here")
	}
	if out, err := exec.Command(docker, "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker daemon answers (%v: %s): the image is not built here", err, bytes.TrimSpace(out))
	}
	tag := fmt.Sprintf("strand-test:%d", os.Getpid())
	build := exec.Command("../../deploy/image.sh", tag)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("deploy/image.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(docker, "rmi", "--force", tag).Run() })
	out, err := exec.Command(docker, "run", "--rm", "--network", "none", tag, "version", "--json").Output()
	if err != nil {
		t.Fatalf("docker run %s version: %v", tag, err)
	}
	var info map[string]any
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("version --json in the image: %v\n%s", err, out)
	}
	if head, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		if commit := strings.TrimSpace(string(head)); info["commit"] != commit {
			t.Errorf("the image's binary says commit %q, want %s (image.sh stamps it)", info["commit"], commit)
		}
	}
	out, err = exec.Command(docker, "run", "--rm", "--network", "none", tag, "demo", "--duration", "1s", "--accounts", "50").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("Smallbank invariant holds")) {
		t.Fatalf("demo in the image: %v\n%s", err, out)
	}
}
