package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMemnodeConfig(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // empty: valid
	}{
		{"valid", "listen: 127.0.0.1:7070\ndataDir: d\ntls: {cert: c.pem, key: k.pem}\ncas: [ca.pem]\nmemoryMB: 512\nflushInterval: 250ms\n", nil},
		{"unknown field", "listen: 127.0.0.1:7070\nmemoryBytes: 5\n", []string{`unknown field "memoryBytes"`, "memoryMB"}},
		{"missing", "memoryMB: 0\n", []string{`listen = ""`, `dataDir = ""`, `tls.cert = ""`, `tls.key = ""`, "cas"}},
		{"ranges", "listen: 127.0.0.1:7070\ndataDir: d\ntls: {cert: c.pem, key: k.pem}\ncas: [ca.pem]\nmemoryMB: -3\nflushBlocks: -1\nflushInterval: 2h\nmaxMessageMB: 4096\nmetrics: nowhere\nlog: {level: loud}\n" +
			"maxCallsPerClient: -1\nmaxWatchesPerClient: 70000\nmaxWatches: -2\nwatchBufferKB: 2\ncores: -1\n",
			[]string{"memoryMB = -3: want 1 to 1048576 (0 means 256)", "flushBlocks = -1: want 1 to 1000000 (0 means 64)",
				"maxCallsPerClient = -1: want 1 to 65536 (0 means 64)", "maxWatchesPerClient = 70000: want 1 to 65536 (0 means 8)",
				"maxWatches = -2: want 1 to 65536 (0 means 256)", "watchBufferKB = 2: want 4 to 1048576 (0 means 1024)", "cores = -1: want 1 to 1024 (0 means Go's default)",
				"flushInterval = 2h0m0s: want 1ms to 1h (0 means 1s)", "maxMessageMB = 4096: want 1 to 2047", `metrics = "nowhere"`, `log.level = "loud"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "memnode.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadMemnode(path)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				o := cfg.Tiers()
				if o.MemoryBytes != 512<<20 || o.FlushInterval != 250*time.Millisecond || !o.NoCache || cfg.CAs[0] != filepath.Join(dir, "ca.pem") {
					t.Fatalf("loaded %+v, tiers %+v", cfg, o)
				}
				if l := cfg.Limits(); l.MaxCallsPerClient != 64 || l.MaxWatchesPerClient != 8 || l.MaxWatches != 256 || cfg.WatchBufferKB != 1024 {
					t.Fatalf("default limits %+v, watch buffer %d KiB", l, cfg.WatchBufferKB)
				}
				return
			}
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err %v, want ErrConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
