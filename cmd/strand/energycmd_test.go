package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnergyCalibrateWithoutRAPL: with no powercap tree the command says
// there is no RAPL and shows the model in force, flags included.
func TestEnergyCalibrateWithoutRAPL(t *testing.T) {
	var out bytes.Buffer
	cmd := rootCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"energy", "calibrate", "--powercap-root", filepath.Join(t.TempDir(), "none"), "--idle-watts", "2"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"No RAPL on this machine", "model in force: model (active 8.50 W/core, idle 2.00 W/core", "with flags over it"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
}

// TestEnergyModelFile: the model command reads a model file and refuses
// impossible ones, naming the field.
func TestEnergyModelFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("active_watts: 6\nidle_watts: 0.5\ncores: 4\n"), 0o644)
	os.WriteFile(bad, []byte("active_watts: 6\nidle_watts: -0.5\n"), 0o644)
	var out bytes.Buffer
	cmd := rootCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"energy", "model", "--energy-model", good})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "active 6.00 W/core, idle 0.50 W/core") || !strings.Contains(out.String(), "good.yaml") {
		t.Errorf("output:\n%s", out.String())
	}
	cmd = rootCmd()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetArgs([]string{"energy", "model", "--energy-model", bad})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "idle_watts") {
		t.Errorf("negative idle power: %v, want an error naming idle_watts", err)
	}
}
