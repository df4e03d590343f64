package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestComputeConfig(t *testing.T) {
	const valid = "name: compute0.peer0.Org1\norg: Org1\nlisten: 127.0.0.1:7060\nprimary: peer0.Org1\n" +
		"identity: {cert: c.pem, key: k.pem}\ntls: {cert: tc.pem, key: tk.pem}\nmemnode: {address: 127.0.0.1:7070, cas: [ca.pem]}\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string // empty: valid
	}{
		{"valid", valid, nil},
		{"unknown field", valid + "primaryAddress: x\n", []string{`unknown field "primaryAddress"`, "primary"}},
		{"missing", "log: {level: info}\n", []string{`name = ""`, `org = ""`, `primary = ""`, `listen = ""`, `identity.cert = ""`, `tls.key = ""`,
			`memnode.address = ""`, "memnode.cas"}},
		{"ranges", strings.Replace(valid, "cas: [ca.pem]", "cas: [ca.pem], cacheMB: -2, callTimeout: 1ms", 1) + "metrics: nowhere\nlog: {format: xml}\n",
			[]string{"memnode.cacheMB = -2: want -1 (none), 0 (the default, 64) or 1 to 1048576", "memnode.callTimeout = 1ms", `metrics = "nowhere"`, `log.format = "xml"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "compute.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadCompute(path)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.Memnode.CacheMB != 0 || cfg.Channel != filepath.Join(dir, "channel.yaml") || cfg.Memnode.CAs[0] != filepath.Join(dir, "ca.pem") {
					t.Fatalf("loaded %+v: want no cache by default and paths resolved against %s", cfg, dir)
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

func TestComputePrimaryEndorses(t *testing.T) {
	n := &NodeConfig{Role: "peer", Name: "p", Org: "o", Listen: "127.0.0.1:1", DataDir: "d", Channel: "c",
		Identity: KeyPair{"a", "b"}, TLS: KeyPair{"a", "b"}, Compute: ComputePoolConfig{PrimaryEndorses: "sometimes"}}
	n.EnsureDefaults()
	err := n.Validate()
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `compute.primaryEndorses = "sometimes": want fallback (the default) or always`) {
		t.Fatalf("Validate: %v", err)
	}
}

func TestComputeVerify(t *testing.T) {
	n := &NodeConfig{Role: "peer", Name: "p", Org: "o", Listen: "127.0.0.1:1", DataDir: "d", Channel: "c",
		Identity: KeyPair{"a", "b"}, TLS: KeyPair{"a", "b"}, Compute: ComputePoolConfig{Verify: "elsewhere"}}
	n.EnsureDefaults()
	err := n.Validate()
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `compute.verify = "elsewhere": want compute (the default) or primary`) {
		t.Fatalf("Validate: %v", err)
	}
	for v, want := range map[string]bool{"": true, "compute": true, "primary": false} {
		if got := (ComputePoolConfig{Verify: v}).VerifyOnCompute(); got != want {
			t.Errorf("compute.verify %q: on the compute nodes %v, want %v", v, got, want)
		}
	}
}
