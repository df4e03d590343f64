package gctune

import (
	"runtime/debug"
	"testing"
)

func TestApply(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	if p, l := Apply(250, 512); !p || !l {
		t.Fatalf("Apply set percent %v, limit %v; want both", p, l)
	}
	if got := debug.SetGCPercent(100); got != 250 {
		t.Errorf("GOGC %d, want 250", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 512<<20 {
		t.Errorf("memory limit %d, want %d", got, 512<<20)
	}
	t.Setenv("GOGC", "50")
	if p, _ := Apply(250, 0); p {
		t.Error("Apply overrode GOGC from the environment")
	}
}
