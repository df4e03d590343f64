package node

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/gctune"
	"github.com/strand-ledger/strand/orderer/cut"
)

const channelYAML = `channel: demo
orgs:
  - id: Org1
    ca: crypto/Org1/ca.pem
    peers:
      - {name: peer0.Org1, address: 127.0.0.1:7051}
  - id: Org2
    ca: crypto/Org2/ca.pem
    peers:
      - {name: peer0.Org2, address: 127.0.0.1:8051}
  - id: OrdererOrg
    ca: crypto/OrdererOrg/ca.pem
    orderers:
      - {name: orderer0, address: 127.0.0.1:7050}
batch: {maxTxs: 100, timeout: 1s}
contracts:
  - {name: smallbank, policy: "AND('Org1.peer','Org2.peer')"}
  - {name: kv, policy: "OR('Org1.peer', 'Org2.peer')"}
`

const nodeYAML = `role: peer
name: peer0.Org1
org: Org1
listen: 127.0.0.1:7051
identity: {cert: crypto/Org1/peer0/cert.pem, key: crypto/Org1/peer0/key.pem}
tls: {cert: crypto/Org1/peer0/tls-cert.pem, key: crypto/Org1/peer0/tls-key.pem}
pipeline: {mode: parallel, verifyWorkers: 4}
log: {format: json}
`

// writeNet writes CAs, the peer0.Org1 key pairs and the two files into a
// temporary directory and returns it.
func writeNet(t *testing.T, channel, nodeFile string) string {
	t.Helper()
	dir := t.TempDir()
	for _, org := range []string{"Org1", "Org2", "OrdererOrg"} {
		ca, err := identity.NewCA(org, identity.ECDSAP256)
		if err != nil {
			t.Fatal(err)
		}
		cert, _, _ := ca.MarshalPEM()
		write(t, filepath.Join(dir, "crypto", org, "ca.pem"), cert)
		if org != "Org1" {
			continue
		}
		s, err := ca.Issue("peer0.Org1", identity.RolePeer, identity.ECDSAP256)
		if err != nil {
			t.Fatal(err)
		}
		c, k, _ := s.MarshalPEM()
		write(t, filepath.Join(dir, "crypto/Org1/peer0/cert.pem"), c)
		write(t, filepath.Join(dir, "crypto/Org1/peer0/key.pem"), k)
		c, k, err = ca.IssueTLS("peer0.Org1", identity.RolePeer, []string{"127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "crypto/Org1/peer0/tls-cert.pem"), c)
		write(t, filepath.Join(dir, "crypto/Org1/peer0/tls-key.pem"), k)
	}
	write(t, filepath.Join(dir, "channel.yaml"), []byte(channel))
	write(t, filepath.Join(dir, "node.yaml"), []byte(nodeFile))
	return dir
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	dir := writeNet(t, channelYAML, nodeYAML)
	ch, err := LoadChannel(filepath.Join(dir, "channel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if ch.Batch != (BatchConfig{Mode: "block", MaxTxs: 100, MaxBytes: DefaultMaxBytes, Timeout: time.Second}) {
		t.Errorf("batch %+v", ch.Batch)
	}
	if got := ch.OrdererOrgs(); len(got) != 1 || got[0] != "OrdererOrg" {
		t.Errorf("OrdererOrgs %q", got)
	}
	if got := ch.PeersOf("Org2"); len(got) != 1 || got[0] != (PeerEndpoint{"peer0.Org2", "Org2", "127.0.0.1:8051"}) {
		t.Errorf("PeersOf(Org2) %+v", got)
	}
	if got := ch.Orderers(); len(got) != 1 || got[0] != (OrdererEndpoint{"orderer0", "OrdererOrg", "127.0.0.1:7050", "127.0.0.1:7050"}) {
		t.Errorf("Orderers %+v", got)
	}
	cc, err := ch.Committer()
	if err != nil {
		t.Fatal(err)
	}
	if cc.Name != "demo" || len(cc.Policies) != 2 || cc.Policies["kv"].String() != "OR('Org1.peer','Org2.peer')" {
		t.Errorf("committer channel %+v", cc)
	}
	n, err := LoadNode(filepath.Join(dir, "node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if n.DataDir != filepath.Join(dir, "data", "peer0.Org1") || n.Channel != filepath.Join(dir, "channel.yaml") {
		t.Errorf("paths not resolved: dataDir %s, channel %s", n.DataDir, n.Channel)
	}
	if err := n.CheckChannel(ch); err != nil {
		t.Error(err)
	}
	o, err := n.CommitterOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o.Mode != committer.Parallel || o.VerifyWorkers != 4 || o.ApplyWorkers != runtime.NumCPU() || o.MaxGroup != 256 {
		t.Errorf("committer options %+v", o)
	}
	s, err := n.Signer()
	if err != nil {
		t.Fatal(err)
	}
	if s.Role() != identity.RolePeer || s.Name() != "peer0.Org1" {
		t.Errorf("signer %s %s", s.Role(), s.Name())
	}
	if n.Logger() == nil || n.StateDB.Options().Pebble.CacheSize != 128<<20 {
		t.Error("logger or pebble options")
	}
	if _, _, err := LoadTLS(n, ch); err != nil {
		t.Fatal(err)
	}
}

func TestHash(t *testing.T) {
	a := writeNet(t, channelYAML, nodeYAML)
	c1, err := LoadChannel(filepath.Join(a, "channel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The same content, laid out differently, in a copy of the directory.
	b := t.TempDir()
	if err := os.CopyFS(b, os.DirFS(a)); err != nil {
		t.Fatal(err)
	}
	alt := strings.Replace(channelYAML, `"OR('Org1.peer', 'Org2.peer')"`, `"or( 'Org1.peer','Org2.peer' )"`, 1)
	write(t, filepath.Join(b, "channel.yaml"), []byte("# a comment\n"+alt))
	c2, err := LoadChannel(filepath.Join(b, "channel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if c1.Hash() != c2.Hash() {
		t.Error("hash differs for the same content")
	}
	c2.Batch.MaxTxs++
	if c1.Hash() == c2.Hash() {
		t.Error("hash equal for different batch")
	}
	c2.Batch.MaxTxs--
	// A cluster address is part of the channel; without one, Cluster is
	// left out of the genesis document, so a channel's hash is what it
	// was before cluster addresses existed.
	c2.Orgs[2].Orderers[0].Cluster = "127.0.0.1:7060"
	if c1.Hash() == c2.Hash() {
		t.Error("hash equal with and without a cluster address")
	}
	if strings.Contains(string(c1.Genesis()), "Cluster") {
		t.Errorf("genesis without cluster addresses names Cluster: %s", c1.Genesis())
	}
	c2.Orgs[2].Orderers[0].Cluster = ""
	c2.Batch.Mode = "stream"
	if c1.Hash() == c2.Hash() {
		t.Error("hash equal for stream and block mode")
	}
	c2.Batch.Mode = c1.Batch.Mode
	// The transaction format is part of the genesis document: a new
	// channel is format 2; format 1 keeps the document of a channel
	// written before formats existed.
	if c1.Format != 2 || !strings.Contains(string(c1.Genesis()), `"Format":"strand-channel-v2"`) {
		t.Errorf("default format %d, genesis %s; want format 2 named in the genesis", c1.Format, c1.Genesis())
	}
	c2.Format = 1
	if c1.Hash() == c2.Hash() || !strings.Contains(string(c2.Genesis()), `"Format":"strand-channel-v1"`) {
		t.Errorf("format 1 genesis %s: want its own hash and strand-channel-v1", c2.Genesis())
	}
	if cc, err := c2.Committer(); err != nil || cc.Format != 1 {
		t.Errorf("format 1 committer channel: format %d, %v", cc.Format, err)
	}
	// Another CA under the same path changes the hash.
	d := writeNet(t, channelYAML, nodeYAML)
	c3, err := LoadChannel(filepath.Join(d, "channel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if c1.Hash() == c3.Hash() {
		t.Error("hash equal for different CAs")
	}
}

func TestChannelErrors(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{
		{"unknown field", "batch:", "batchh:", []string{"channel.yaml: line 15", `unknown field "batchh"`, "want one of channel, orgs, batch, contracts"}},
		{"unknown nested field", "{name: orderer0,", "{nam: orderer0,", []string{"line 14", `unknown field "nam"`, "want one of name, address"}},
		{"bad address", "127.0.0.1:8051", "127.0.0.1", []string{"channel.yaml:10: orgs[1].peers[0].address = \"127.0.0.1\": want host:port"}},
		{"duplicate address", "127.0.0.1:8051", "127.0.0.1:7051", []string{"orgs[1].peers[0].address", "orgs[0].peers[0].address has it"}},
		{"duplicate name", "peer0.Org2,", "peer0.Org1,", []string{"orgs[1].peers[0].name = \"peer0.Org1\""}},
		{"duplicate org", "id: Org2", "id: Org1", []string{":7: orgs[1].id = \"Org1\""}},
		{"no orderers", "orderers:", "peers:", []string{"at least one org with an orderers list"}},
		{"bad policy", "AND('Org1.peer','Org2.peer')", "AND('Org1.peer' 'Org2.peer')", []string{"contracts[0].policy", "at position 16"}},
		{"policy org", "OR('Org1.peer', 'Org2.peer')", "OR('Org1.peer', 'Org9.peer')", []string{"contracts[1].policy", `org "Org9" is not one of ["Org1" "Org2" "OrdererOrg"]`}},
		{"bad batch", "maxTxs: 100", "maxTxs: -1", []string{"batch.maxTxs = -1: want 1 to 100000"}},
		{"bad batch mode", "maxTxs: 100", "mode: streaming, maxTxs: 100", []string{"channel.yaml:15: batch.mode = \"streaming\": want block or stream"}},
		{"bad duration", "timeout: 1s", "timeout: 1", []string{"channel.yaml: line 15: batch.timeout = 1: want a duration with a unit such as 2s"}},
		{"string for int", "maxTxs: 100", "maxTxs: lots", []string{`channel.yaml: line 15: batch.maxTxs = "lots": want a whole number`}},
		{"list for string", "address: 127.0.0.1:8051}", "address: [a, b]}", []string{"orgs[1].peers[0].address = a list: want a string"}},
		{"empty checkpoint", "maxTxs: 100", "maxTxs: 100, checkpoint: {}", []string{"batch.checkpoint = \"{}\": want blocks, interval or both"}},
		{"bad checkpoint blocks", "maxTxs: 100", "maxTxs: 100, checkpoint: {blocks: -3}", []string{"batch.checkpoint.blocks = -3: want 0 (no count rule) to 1000000"}},
		{"bad checkpoint interval", "maxTxs: 100", "maxTxs: 100, checkpoint: {interval: 2h}", []string{"batch.checkpoint.interval = \"2h0m0s\": want 0 (no time rule) or a duration from 1ms to 1h"}},
		{"unknown checkpoint field", "maxTxs: 100", "maxTxs: 100, checkpoint: {every: 3}", []string{`unknown field "every"`, "want one of blocks, interval"}},
		{"missing CA", "crypto/Org2/ca.pem", "crypto/Org2/nope.pem", []string{"orgs[1].ca", "nope.pem", "no such file"}},
		{"bad channel", "channel: demo", "channel: de mo", []string{":1: channel = \"de mo\""}},
		{"bad format", "channel: demo", "channel: demo\nformat: 3", []string{"channel.yaml:2: format = 3: want 2 (endorsements bound to their transaction; the default) or 1"}},
		{"bad cluster", "address: 127.0.0.1:7050}", "address: 127.0.0.1:7050, cluster: 127.0.0.1}", []string{"orgs[2].orderers[0].cluster = \"127.0.0.1\": want host:port"}},
		{"cluster is an address", "address: 127.0.0.1:7050}", "address: 127.0.0.1:7050, cluster: 127.0.0.1:7051}", []string{"orgs[2].orderers[0].cluster", "orgs[0].peers[0].address has it"}},
		{"bad runtime", "{name: kv,", "{name: kv, runtime: jvm,", []string{`contracts[1].runtime = "jvm": want builtin (the default), wasm or external`}},
		{"wasm without code", "{name: kv,", "{name: kv, runtime: wasm,", []string{"contracts[1].code", "contracts[1].hash", "64 lowercase hex digits"}},
		{"builtin with hash", "{name: kv,", "{name: kv, hash: abcd,", []string{"contracts[1].runtime", "wasm when code or hash is set"}},
		{"peer cluster", "address: 127.0.0.1:8051}", "address: 127.0.0.1:8051, cluster: 127.0.0.1:8052}", []string{"orgs[1].peers[0].cluster", "only orderers have one"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(channelYAML, tc.from) {
				t.Fatalf("%q not in the channel file", tc.from)
			}
			dir := writeNet(t, strings.Replace(channelYAML, tc.from, tc.to, 1), nodeYAML)
			_, err := LoadChannel(filepath.Join(dir, "channel.yaml"))
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err %v, want ErrConfig", err)
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestNodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{
		{"unknown field", "log:", "logs:", []string{"node.yaml: line 8", `unknown field "logs"`}},
		{"role", "role: peer", "role: endorser", []string{"node.yaml:1: role = \"endorser\": want peer or orderer"}},
		{"listen", "listen: 127.0.0.1:7051", "listen: 127.0.0.1:99999", []string{":4: listen = \"127.0.0.1:99999\""}},
		{"mode", "mode: parallel", "mode: fast", []string{":7: pipeline.mode = \"fast\": want sequential or parallel"}},
		{"workers", "verifyWorkers: 4", "verifyWorkers: 5000", []string{"pipeline.verifyWorkers = 5000"}},
		{"state cache", "verifyWorkers: 4", "verifyWorkers: 4, stateCacheMB: -2", []string{"pipeline.stateCacheMB = -2: want -1 (off), 0 (16) or 1 to 65536"}},
		{"format", "format: json", "format: xml", []string{":8: log.format = \"xml\": want text or json"}},
		{"bool", "log:", "profile: often\nlog:", []string{`line 8: profile = "often": want true or false`}},
		{"missing tls", "tls: {cert: crypto/Org1/peer0/tls-cert.pem, key: crypto/Org1/peer0/tls-key.pem}\n", "", []string{"tls.cert = \"\"", "tls.key = \"\""}},
		{"empty", nodeYAML, "", []string{"file is empty"}},
		{"gc percent", "log:", "gc: {percent: 5}\nlog:", []string{"gc.percent = 5: want 10 to 10000"}},
		{"gc off without limit", "log:", "gc: {percent: -1, memoryLimitMB: -1}\nlog:", []string{"gc.percent = -1: want -1 only with a memory limit"}},
		{"memory limit", "log:", "gc: {memoryLimitMB: -2}\nlog:", []string{"gc.memoryLimitMB = -2: want 1 to 1048576, 0 for the default (2048) or -1 for no limit"}},
		{"key tables", "log:", "keyTablesMB: -3\nlog:", []string{"keyTablesMB = -3: want 1 to 65536, 0 for the default (64) or -1 for no client-key tables"}},
		{"profile without metrics", "log:", "profile: true\nlog:", []string{"profile = true: want false unless metrics is set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeNet(t, channelYAML, strings.Replace(nodeYAML, tc.from, tc.to, 1))
			_, err := LoadNode(filepath.Join(dir, "node.yaml"))
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err %v, want ErrConfig", err)
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestCheckChannel(t *testing.T) {
	dir := writeNet(t, channelYAML, strings.Replace(nodeYAML, "org: Org1", "org: Org2", 1))
	ch, err := LoadChannel(filepath.Join(dir, "channel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := LoadNode(filepath.Join(dir, "node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.CheckChannel(ch); err == nil || !strings.Contains(err.Error(), `org = "Org2": want Org1`) {
		t.Errorf("CheckChannel: %v", err)
	}
	if _, err := n.Signer(); err == nil {
		t.Error("signer of Org1 loaded as Org2")
	}
}

func TestBatchMode(t *testing.T) {
	dir := writeNet(t, channelYAML, nodeYAML)
	block, err := LoadChannel(filepath.Join(dir, "channel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if m := block.OrdererBatch().Mode; m != cut.ModeBlock {
		t.Errorf("default mode %q, want block", m)
	}
	if g := string(block.Genesis()); strings.Contains(g, "Mode") {
		t.Errorf("a block-mode genesis document names its mode, so its hash changed: %s", g)
	}
	dir = writeNet(t, strings.Replace(channelYAML, "maxTxs: 100", "mode: stream, maxTxs: 100", 1), nodeYAML)
	stream, err := LoadChannel(filepath.Join(dir, "channel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if m := stream.OrdererBatch().Mode; m != cut.ModeStream {
		t.Errorf("mode %q, want stream", m)
	}
	if g := string(stream.Genesis()); !strings.Contains(g, `"Mode":"stream"`) {
		t.Errorf("a stream-mode genesis document does not name its mode: %s", g)
	}
}

func TestMemoryLimitDefault(t *testing.T) {
	for set, want := range map[int]int{0: gctune.DefaultMemoryLimitMB, -1: 0, 512: 512} {
		n := NodeConfig{GC: GCConfig{MemoryLimitMB: set}}
		if got := n.MemoryLimitMB(); got != want {
			t.Errorf("gc.memoryLimitMB %d: MemoryLimitMB %d, want %d", set, got, want)
		}
	}
}

func TestKeyTableBytesDefault(t *testing.T) {
	for set, want := range map[int]int64{0: identity.DefaultKeyTableBytes, -1: 0, 16: 16 << 20} {
		n := NodeConfig{KeyTablesMB: set}
		if got := n.KeyTableBytes(); got != want {
			t.Errorf("keyTablesMB %d: KeyTableBytes %d, want %d", set, got, want)
		}
	}
}

func TestGCPercentDefault(t *testing.T) {
	for _, tc := range []struct {
		backend string
		percent int
		want    int
	}{
		{"", 0, gctune.DefaultPercent},
		{"leveldb", 0, gctune.DefaultPercent},
		{"badger", 0, gctune.BadgerPercent},
		{"badger", 250, 250}, // an explicit percent wins
	} {
		n := NodeConfig{Role: "peer", StateDB: StateDBConfig{Backend: tc.backend}, GC: GCConfig{Percent: tc.percent}}
		n.EnsureDefaults()
		if got := n.GCPercent(); got != tc.want {
			t.Errorf("backend %q, percent %d: GCPercent %d, want %d", tc.backend, tc.percent, got, tc.want)
		}
	}
}
