package node

import (
	"fmt"
	"github.com/strand-ledger/strand/contract"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/gateway"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/gctune"
	"gopkg.in/yaml.v3"
)

// NodeConfig is the file of one peer or orderer process. LoadNode fills
// the defaults noted on each field and resolves relative paths against the
// file's directory. docs/config.md documents every field.
type NodeConfig struct {
	// Role is "peer" or "orderer". Required.
	Role string `yaml:"role"`
	// Name is the node's name: its entry in the channel file and the CN of
	// its certificates. Required.
	Name string `yaml:"name"`
	// Org is the ID of the node's org in the channel file. Required.
	Org string `yaml:"org"`
	// Listen is the host:port the node's gRPC server binds. Required.
	Listen string `yaml:"listen"`
	// DataDir holds the node's ledger. Default data/<name>.
	DataDir string `yaml:"dataDir"`
	// Channel is the path of the channel file. Default channel.yaml,
	// unless Channels is set.
	Channel string `yaml:"channel"`
	// Channels, for a peer that serves several channels, are the paths of
	// their channel files, instead of Channel (set one or the other). Each
	// channel keeps its ledger in DataDir/channels/<channel id>; a peer
	// configured with Channel keeps it in DataDir itself, as before
	// (docs/channels.md). Default empty.
	Channels []string `yaml:"channels,omitempty"`
	// Identity is the signing key pair (cert.pem, key.pem). Required.
	Identity KeyPair `yaml:"identity"`
	// TLS is the TLS key pair (tls-cert.pem, tls-key.pem). Required.
	TLS KeyPair `yaml:"tls"`
	// StateDB selects the world-state database of a peer.
	StateDB StateDBConfig `yaml:"stateDB"`
	// Pipeline tunes a peer's commit pipeline.
	Pipeline PipelineConfig `yaml:"pipeline"`
	// Compute tunes a peer's pool of compute nodes (strand compute
	// start), which join it over ComputePool.Join.
	Compute ComputePoolConfig `yaml:"compute,omitempty"`
	// Metrics is the host:port of a Prometheus /metrics endpoint. Default
	// empty: no metrics endpoint.
	Metrics string `yaml:"metrics,omitempty"`
	// Profile also serves Go's profiles (/debug/pprof/) on the metrics
	// address. Default false.
	Profile bool `yaml:"profile,omitempty"`
	// GC tunes Go's garbage collector; the environment's GOGC and
	// GOMEMLIMIT win over it.
	GC GCConfig `yaml:"gc,omitempty"`
	// KeyTablesMB bounds the memory of the precomputed verification tables
	// the node builds for client keys it verifies often (78 KiB a key; the
	// channel's peers', orderers' and admins' keys always get theirs, outside
	// the bound), in MiB. Default 0: 64 MiB (identity.DefaultKeyTableBytes,
	// about 820 client keys); -1: none, client signatures verified with
	// crypto/ecdsa alone.
	KeyTablesMB int `yaml:"keyTablesMB,omitempty"`
	// Log configures the node's log.
	Log LogConfig `yaml:"log"`
	// Builtins are the contracts compiled into the binary that a
	// definition with runtime builtin may name (set in code, not in the
	// file); nil means DefaultBuiltins.
	Builtins *contract.Builtins `yaml:"-"`
	// Join, for an orderer that a channel config update added to a Raft
	// ordering service, is the path of that update's envelope (as `strand
	// channel update --out` writes it): the orderer takes its Raft id and
	// the orderer set from it and joins the running cluster instead of
	// bootstrapping. Such an orderer is not in the channel file. For a
	// peer of an org that a membership update added, it is the path of
	// that update's envelope (as `strand channel add-org --out` writes
	// it): the peer is not in the channel file either, starts from its
	// genesis and catches up from the orderers (docs/membership.md).
	// Default empty.
	Join string `yaml:"join,omitempty"`

	file string
	root *yaml.Node
}

// GCConfig tunes Go's garbage collector (package gctune).
type GCConfig struct {
	// Percent is GOGC: the heap grows by this percentage of the live heap
	// between collections. Default 300, or 100 with the badger state
	// database (package gctune says why); -1 turns collection off (use
	// only with MemoryLimitMB).
	Percent int `yaml:"percent,omitempty"`
	// MemoryLimitMB is a soft limit on the Go runtime's memory, in MiB
	// (GOMEMLIMIT): near it the collector runs more often. Default 0:
	// gctune.DefaultMemoryLimitMB (2048); -1: no limit.
	MemoryLimitMB int `yaml:"memoryLimitMB,omitempty"`
}

// KeyTableBytes is the bound on client-key verification tables the node
// runs with: KeyTablesMB in bytes, its default when 0, or 0 for none (-1).
func (n *NodeConfig) KeyTableBytes() int64 {
	switch n.KeyTablesMB {
	case 0:
		return identity.DefaultKeyTableBytes
	case -1:
		return 0
	}
	return int64(n.KeyTablesMB) << 20
}

// MemoryLimitMB is the soft memory limit the node runs with, in MiB:
// GC.MemoryLimitMB, its default when that is 0, or 0 for none (-1).
func (n *NodeConfig) MemoryLimitMB() int {
	switch n.GC.MemoryLimitMB {
	case 0:
		return gctune.DefaultMemoryLimitMB
	case -1:
		return 0
	}
	return n.GC.MemoryLimitMB
}

// GCPercent is the GOGC the node runs with: GC.Percent, or when that is
// 0 the default for its state database. It is resolved here, not in
// EnsureDefaults, so that a caller that changes the backend after loading
// (as the benchmark's embedded network does) gets the backend's default.
func (n *NodeConfig) GCPercent() int {
	switch {
	case n.GC.Percent != 0:
		return n.GC.Percent
	case n.Role == "peer" && n.StateDB.Backend == "badger": // its buffers live in the Go heap
		return gctune.BadgerPercent
	}
	return gctune.DefaultPercent
}

// KeyPair names a PEM certificate and its PKCS #8 private key.
type KeyPair struct {
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// PipelineConfig mirrors committer.Options; 0 means the default.
type PipelineConfig struct {
	Mode          string `yaml:"mode"`                   // sequential (default) | parallel
	VerifyWorkers int    `yaml:"verifyWorkers"`          // 0 = number of CPUs; up to 1024
	ApplyWorkers  int    `yaml:"applyWorkers,omitempty"` // 0 = number of CPUs; up to 1024
	MaxGroup      int    `yaml:"maxGroup"`               // default 256; up to 65536
	Window        int    `yaml:"window"`                 // default 512; 2 to 1048576
	WindowBytes   int    `yaml:"windowBytes"`            // default 8 MiB; at least 1024
	SyncState     bool   `yaml:"syncState,omitempty"`    // default false
	// Durability: durable (default: a client hears "committed" after the
	// peer's fsync) or relaxed (after apply; fsync within FlushInterval).
	Durability    string        `yaml:"durability,omitempty"`
	FlushInterval time.Duration `yaml:"flushInterval,omitempty"` // relaxed: default 20ms; 1ms to 10s
	// StateCacheMB bounds the cache of recently committed values read
	// before the state database: default 16; -1 off; up to 65536.
	StateCacheMB int `yaml:"stateCacheMB,omitempty"`
}

// ComputePoolConfig tunes the endorsement pool of a peer that is the
// primary of a logical peer.
type ComputePoolConfig struct {
	// PrimaryEndorses: fallback (default: the peer endorses only while no
	// compute node is in its pool, and when every one failed to answer;
	// FlexChain's primary leaves endorsement to its compute nodes) or
	// always (the peer is one more member of the pool).
	PrimaryEndorses string `yaml:"primaryEndorses,omitempty"`
	// Verify: compute (default: the compute nodes in the pool check the
	// signatures of delivered transactions for the committer's stage 1,
	// FlexChain's V1 on the compute tier; the peer checks those no compute
	// node checked) or primary (the peer checks every signature itself).
	Verify string `yaml:"verify,omitempty"`
}

// VerifyOnCompute converts verify.
func (c ComputePoolConfig) VerifyOnCompute() bool { return c.Verify != "primary" }

// PrimaryMode converts primaryEndorses.
func (c ComputePoolConfig) PrimaryMode() gateway.PrimaryMode {
	if c.PrimaryEndorses == "always" {
		return gateway.PrimaryAlways
	}
	return gateway.PrimaryFallback
}

// LogConfig configures the node's slog logger.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug | info (default) | warn | error
	Format string `yaml:"format"` // text (default) | json
}

// LoadNode reads a node file, fills in the defaults, resolves its paths
// against the file's directory and validates it.
func LoadNode(path string) (*NodeConfig, error) {
	n := &NodeConfig{}
	root, err := readYAML(path, n)
	if err != nil {
		return nil, err
	}
	n.file, n.root = path, root
	n.EnsureDefaults()
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("node: %s: %w", path, err)
	}
	for _, p := range []*string{&n.DataDir, &n.Channel, &n.Identity.Cert, &n.Identity.Key, &n.TLS.Cert, &n.TLS.Key} {
		*p = resolve(dir, *p)
	}
	for i := range n.Channels {
		n.Channels[i] = resolve(dir, n.Channels[i])
	}
	if n.Join != "" {
		n.Join = resolve(dir, n.Join)
	}
	for i := range n.StateDB.Memnode.CAs {
		n.StateDB.Memnode.CAs[i] = resolve(dir, n.StateDB.Memnode.CAs[i])
	}
	n.StateDB.Redis.resolve(dir)
	if err := n.Validate(); err != nil {
		return nil, err
	}
	return n, nil
}

// EnsureDefaults fills in zero fields. Pipeline worker counts stay 0 (the
// committer reads 0 as the number of CPUs).
func (n *NodeConfig) EnsureDefaults() {
	if n.DataDir == "" && n.Name != "" {
		n.DataDir = filepath.Join("data", n.Name)
	}
	if n.Channel == "" && len(n.Channels) == 0 {
		n.Channel = "channel.yaml"
	}
	n.StateDB.ensureDefaults()
	if n.Pipeline.Mode == "" {
		n.Pipeline.Mode = "sequential"
	}
	if n.Pipeline.Durability == "" {
		n.Pipeline.Durability = "durable"
	}
	if n.Log.Level == "" {
		n.Log.Level = "info"
	}
	if n.Log.Format == "" {
		n.Log.Format = "text"
	}
}

// Validate reports every invalid field.
func (n *NodeConfig) Validate() error {
	ck := &checker{file: n.file, root: n.root}
	if n.Role != "peer" && n.Role != "orderer" {
		ck.bad("role", n.Role, "peer or orderer")
	}
	if n.Name == "" || len(n.Name) > 64 || !isName(n.Name) {
		ck.bad("name", n.Name, "1 to 64 letters, digits, '.', '-' or '_' (the node's name in the channel file)")
	}
	if n.Org == "" || len(n.Org) > 64 || !isName(n.Org) {
		ck.bad("org", n.Org, "1 to 64 letters, digits, '.', '-' or '_' (an org ID of the channel file)")
	}
	listen := n.Listen
	if strings.HasPrefix(listen, ":") {
		listen = "0.0.0.0" + listen // an empty host listens on every interface
	}
	if why := checkHostPort(listen); why != "" {
		ck.bad("listen", n.Listen, why+"; an empty host (:7051) listens on every interface")
	}
	for _, f := range []struct{ field, path string }{{"dataDir", n.DataDir},
		{"identity.cert", n.Identity.Cert}, {"identity.key", n.Identity.Key}, {"tls.cert", n.TLS.Cert}, {"tls.key", n.TLS.Key}} {
		if f.path == "" {
			ck.bad(f.field, f.path, "a path, relative to this file or absolute")
		}
	}
	n.checkChannels(ck)
	n.StateDB.check(ck)
	n.checkPipeline(ck)
	if n.Metrics != "" {
		if why := checkHostPort(n.Metrics); why != "" {
			ck.bad("metrics", n.Metrics, why+", or empty for no metrics endpoint")
		}
	}
	if n.Profile && n.Metrics == "" {
		ck.bad("profile", n.Profile, "false unless metrics is set (profiles are served on the metrics address)")
	}
	if p := n.GC.Percent; p != 0 && p != -1 && (p < 10 || p > 10000) {
		ck.bad("gc.percent", p, "10 to 10000, -1 for off, or 0 for the default (300; 100 with badger)")
	}
	if m := n.GC.MemoryLimitMB; m < -1 || m > 1<<20 {
		ck.bad("gc.memoryLimitMB", m, fmt.Sprintf("1 to 1048576, 0 for the default (%d) or -1 for no limit", gctune.DefaultMemoryLimitMB))
	}
	if m := n.KeyTablesMB; m < -1 || m > 1<<16 {
		ck.bad("keyTablesMB", m, fmt.Sprintf("1 to 65536, 0 for the default (%d) or -1 for no client-key tables", identity.DefaultKeyTableBytes>>20))
	}
	if n.GC.Percent == -1 && n.GC.MemoryLimitMB == -1 {
		ck.bad("gc.percent", -1, "-1 only with a memory limit (gc.memoryLimitMB not -1), or the heap grows without bound")
	}
	if e := n.Compute.PrimaryEndorses; e != "" && e != "fallback" && e != "always" {
		ck.bad("compute.primaryEndorses", e, "fallback (the default) or always")
	}
	if v := n.Compute.Verify; v != "" && v != "compute" && v != "primary" {
		ck.bad("compute.verify", v, "compute (the default) or primary")
	}
	if n.Join != "" && n.Role != "orderer" && n.Role != "peer" {
		ck.bad("join", n.Join, "empty: only an orderer joins a Raft ordering service, and a peer a channel its org was added to")
	}
	if _, ok := logLevels[n.Log.Level]; !ok {
		ck.bad("log.level", n.Log.Level, "debug, info, warn or error")
	}
	if n.Log.Format != "text" && n.Log.Format != "json" {
		ck.bad("log.format", n.Log.Format, "text or json")
	}
	return ck.err()
}

func (n *NodeConfig) checkPipeline(ck *checker) {
	p := n.Pipeline
	if _, err := committer.ParseMode(p.Mode); err != nil {
		ck.bad("pipeline.mode", p.Mode, "sequential or parallel")
	}
	if p.VerifyWorkers < 0 || p.VerifyWorkers > 1024 {
		ck.bad("pipeline.verifyWorkers", p.VerifyWorkers, "0 (one per CPU) to 1024")
	}
	if p.ApplyWorkers < 0 || p.ApplyWorkers > 1024 {
		ck.bad("pipeline.applyWorkers", p.ApplyWorkers, "0 (one per CPU) to 1024")
	}
	if p.MaxGroup < 0 || p.MaxGroup > 65536 {
		ck.bad("pipeline.maxGroup", p.MaxGroup, "0 (256) to 65536")
	}
	if p.Window != 0 && (p.Window < 2 || p.Window > 1<<20) {
		ck.bad("pipeline.window", p.Window, "0 (512) or 2 to 1048576")
	}
	if p.WindowBytes != 0 && p.WindowBytes < 1<<10 {
		ck.bad("pipeline.windowBytes", p.WindowBytes, "0 (8388608) or at least 1024")
	}
	if _, err := committer.ParseDurability(p.Durability); err != nil {
		ck.bad("pipeline.durability", p.Durability, "durable or relaxed")
	}
	if f := p.FlushInterval; f != 0 && (f < time.Millisecond || f > 10*time.Second) {
		ck.bad("pipeline.flushInterval", f, "0 (20ms) or 1ms to 10s")
	}
	if p.StateCacheMB < -1 || p.StateCacheMB > 65536 {
		ck.bad("pipeline.stateCacheMB", p.StateCacheMB, "-1 (off), 0 (16) or 1 to 65536")
	}
}

// CheckChannel checks that the channel lists this node under its org with
// its role.
func (n *NodeConfig) CheckChannel(ch *ChannelConfig) error {
	ck := &checker{file: n.file, root: n.root}
	var found []string
	for _, o := range ch.Orgs {
		for _, e := range o.Peers {
			if e.Name == n.Name {
				found = append(found, "peer", o.ID)
			}
		}
		for _, e := range o.Orderers {
			if e.Name == n.Name {
				found = append(found, "orderer", o.ID)
			}
		}
	}
	switch {
	case len(found) == 0 && n.Join != "" && n.Role == "peer":
		if err := n.checkJoinOrg(ch); err != nil {
			return err
		}
	case len(found) == 0 && n.Join != "":
		// an orderer added by a config update: raftConfig checks the update
	case len(found) == 0:
		ck.bad("name", n.Name, fmt.Sprintf("a peer or orderer of channel %q (file %s)", ch.Channel, ch.file))
	case found[0] != n.Role:
		ck.bad("role", n.Role, fmt.Sprintf("%s, the role of %q in channel %q", found[0], n.Name, ch.Channel))
	case found[1] != n.Org:
		ck.bad("org", n.Org, fmt.Sprintf("%s, the org of %q in channel %q", found[1], n.Name, ch.Channel))
	}
	return ck.err()
}

// checkJoinOrg checks a peer's join file: a membership update of ch
// that adds the peer's org, which is not a genesis org. Whether the
// update was applied is the chain's business: until it is, the peer
// catches up and its endorsements count for nothing.
func (n *NodeConfig) checkJoinOrg(ch *ChannelConfig) error {
	_, err := n.JoinOrg(ch)
	return err
}

// JoinOrg returns the definition of the peer's org from its join file
// (see checkJoinOrg), which the peer's registry takes provisionally
// (identity.Registry.AddJoiningOrg) until the chain brings the update.
func (n *NodeConfig) JoinOrg(ch *ChannelConfig) (*identity.OrgDef, error) {
	raw, err := os.ReadFile(n.Join)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: join: %w", ErrConfig, n.file, err)
	}
	_, u, err := api.DecodeMembersEnvelope(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %s: join: %s: %w", ErrConfig, n.file, n.Join, err)
	case u.Channel != ch.Channel:
		return nil, fmt.Errorf("%w: %s: join: %s updates channel %q, this peer's channel is %q", ErrConfig, n.file, n.Join, u.Channel, ch.Channel)
	}
	for _, o := range ch.Orgs {
		if o.ID == n.Org {
			return nil, fmt.Errorf("%w: %s: join: org %s is a genesis org of channel %q; list peer %s in the channel file instead", ErrConfig, n.file, n.Org, ch.Channel, n.Name)
		}
	}
	i := slices.IndexFunc(u.Add, func(o api.MembersOrg) bool { return o.ID == n.Org })
	if i < 0 {
		return nil, fmt.Errorf("%w: %s: join: the membership update in %s does not add org %s", ErrConfig, n.file, n.Join, n.Org)
	}
	d, err := identity.ParseOrgDef(n.Org, u.Add[i].CACerts, u.Add[i].TLSCACerts)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: join: %s: %w", ErrConfig, n.file, n.Join, err)
	}
	return d, nil
}

// CommitterOptions converts the pipeline section, with the committer's
// defaults filled in.
func (n *NodeConfig) CommitterOptions() (committer.Options, error) {
	mode, err := committer.ParseMode(n.Pipeline.Mode)
	if err != nil {
		return committer.Options{}, fileErrorf(n.file, "pipeline.mode: %v", err)
	}
	dur, err := committer.ParseDurability(n.Pipeline.Durability)
	if err != nil {
		return committer.Options{}, fileErrorf(n.file, "pipeline.durability: %v", err)
	}
	o := committer.Options{
		Mode:          mode,
		VerifyWorkers: n.Pipeline.VerifyWorkers,
		ApplyWorkers:  n.Pipeline.ApplyWorkers,
		MaxGroup:      n.Pipeline.MaxGroup,
		Window:        n.Pipeline.Window,
		WindowBytes:   n.Pipeline.WindowBytes,
		SyncState:     n.Pipeline.SyncState,
		Durability:    dur,
		FlushInterval: n.Pipeline.FlushInterval,
	}
	if mb := n.Pipeline.StateCacheMB; mb != 0 {
		o.StateCacheBytes = max(int64(mb)<<20, -1)
	}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return committer.Options{}, fileErrorf(n.file, "pipeline: %v", err)
	}
	return o, nil
}

// Signer loads the node's signing identity and checks that its certificate
// names the node's org and carries its role.
func (n *NodeConfig) Signer() (*identity.Signer, error) {
	cert, err := os.ReadFile(n.Identity.Cert)
	if err != nil {
		return nil, fmt.Errorf("node: %s: identity.cert, the node's signing certificate: %w", n.file, err)
	}
	key, err := os.ReadFile(n.Identity.Key)
	if err != nil {
		return nil, fmt.Errorf("node: %s: identity.key, the node's signing key: %w", n.file, err)
	}
	s, err := identity.LoadSigner(n.Org, cert, key)
	if err != nil {
		return nil, fmt.Errorf("node: %s: identity (%s, %s): %w", n.file, n.Identity.Cert, n.Identity.Key, err)
	}
	if s.Role().String() != n.Role {
		return nil, fileErrorf(n.file, "identity.cert %s carries role %s, want %s (the node's role)", n.Identity.Cert, s.Role(), n.Role)
	}
	return s, nil
}

var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// Logger returns a logger writing to stderr at the configured level and
// format, with the node's name on every record.
func (n *NodeConfig) Logger() *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevels[n.Log.Level]}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if n.Log.Format == "json" {
		h = slog.NewJSONHandler(os.Stderr, opts)
	}
	return slog.New(h).With("node", n.Name)
}

// checkHostPort returns "" for a valid host:port, or what is wanted.
func checkHostPort(addr string) string {
	const want = "host:port with a port from 1 to 65535, such as 127.0.0.1:7051"
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return want
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return want
	}
	return ""
}

// builtins is Builtins or, unset, DefaultBuiltins.
func (n *NodeConfig) builtins() *contract.Builtins {
	if n.Builtins != nil {
		return n.Builtins
	}
	return DefaultBuiltins()
}
