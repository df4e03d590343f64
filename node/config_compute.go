package node

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/strand-ledger/strand/contract"
	"gopkg.in/yaml.v3"
)

// ComputeConfig is the file of a compute node (`strand compute start
// --config compute.yaml`): FlexChain's compute node of a logical peer. It
// simulates and endorses proposals, signed as a peer of its org, over the
// state of its primary's memory node, and joins its primary's endorsement
// pool for as long as it runs. It has no ledger and commits nothing.
// 0 and "" mean the default.
type ComputeConfig struct {
	// Name is the compute node's name: the CN of its certificates (a peer
	// identity of Org; it need not be in the channel file). Required.
	Name string `yaml:"name"`
	// Org is the org of the compute node and its primary. Required.
	Org string `yaml:"org"`
	// Listen is the host:port where it serves the Endorser service; the
	// primary dials it there. Required.
	Listen string `yaml:"listen"`
	// Channel is the path of the channel file. Default channel.yaml.
	Channel string `yaml:"channel"`
	// Identity is the signing key pair of a peer of Org. Required.
	Identity KeyPair `yaml:"identity"`
	// TLS is the TLS key pair of a peer of Org, the same CN. Required.
	TLS KeyPair `yaml:"tls"`
	// Primary names the primary: a peer of Org in the channel file, whose
	// address there it joins at. Required.
	Primary string `yaml:"primary"`
	// Memnode reaches the primary's memory node, whose state it reads.
	// Its cacheMB (default 64; -1: none) is a local cache that follows
	// the memory node's change feed: a batch the primary applies drops
	// the keys it wrote, so a read is never older than the last batch the
	// feed delivered, and staleness costs only MVCC conflicts.
	Memnode MemnodeClientConfig `yaml:"memnode"`
	// Metrics is the host:port of a Prometheus /metrics endpoint; empty:
	// none.
	Metrics string `yaml:"metrics,omitempty"`
	// Log configures the logger.
	Log LogConfig `yaml:"log"`
	// Builtins are the contracts compiled into the binary (set in code,
	// not in the file); nil means DefaultBuiltins. A compute node must
	// have those of its primary (NodeConfig.Builtins), or it refuses the
	// definitions that name one it lacks.
	Builtins *contract.Builtins `yaml:"-"`

	file string
	root *yaml.Node
}

// builtins is Builtins or, unset, DefaultBuiltins.
func (c *ComputeConfig) builtins() *contract.Builtins {
	if c.Builtins != nil {
		return c.Builtins
	}
	return DefaultBuiltins()
}

// LoadCompute reads a compute node file, fills in the defaults, resolves
// its paths against the file's directory and validates it.
func LoadCompute(path string) (*ComputeConfig, error) {
	c := &ComputeConfig{}
	root, err := readYAML(path, c)
	if err != nil {
		return nil, err
	}
	c.file, c.root = path, root
	c.EnsureDefaults()
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("node: %s: %w", path, err)
	}
	for _, p := range []*string{&c.Channel, &c.Identity.Cert, &c.Identity.Key, &c.TLS.Cert, &c.TLS.Key} {
		if *p != "" {
			*p = resolve(dir, *p)
		}
	}
	for i := range c.Memnode.CAs {
		c.Memnode.CAs[i] = resolve(dir, c.Memnode.CAs[i])
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// EnsureDefaults fills in zero fields.
func (c *ComputeConfig) EnsureDefaults() {
	if c.Channel == "" {
		c.Channel = "channel.yaml"
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "text"
	}
}

// Validate reports every invalid field.
func (c *ComputeConfig) Validate() error {
	ck := &checker{file: c.file, root: c.root}
	for _, f := range []struct{ field, v, what string }{{"name", c.Name, "the CN of its certificates"},
		{"org", c.Org, "an org ID of the channel file"}, {"primary", c.Primary, "the name of a peer of org in the channel file"}} {
		if f.v == "" || len(f.v) > 64 || !isName(f.v) {
			ck.bad(f.field, f.v, "1 to 64 letters, digits, '.', '-' or '_' ("+f.what+")")
		}
	}
	if why := checkHostPort(c.Listen); why != "" {
		ck.bad("listen", c.Listen, why+" (the primary dials it there)")
	}
	for _, f := range []struct{ field, path string }{{"channel", c.Channel},
		{"identity.cert", c.Identity.Cert}, {"identity.key", c.Identity.Key}, {"tls.cert", c.TLS.Cert}, {"tls.key", c.TLS.Key}} {
		if f.path == "" {
			ck.bad(f.field, f.path, "a path, relative to this file or absolute")
		}
	}
	if why := checkHostPort(c.Memnode.Address); why != "" {
		ck.bad("memnode.address", c.Memnode.Address, why+" (the primary's memory node)")
	}
	if len(c.Memnode.CAs) == 0 {
		ck.bad("memnode.cas", "", "at least one PEM CA file that issued the memory node's TLS certificate")
	}
	if v := c.Memnode.CacheMB; v < -1 || v > 1<<20 {
		ck.bad("memnode.cacheMB", v, "-1 (none), 0 (the default, 64) or 1 to 1048576")
	}
	if iv := c.Memnode.CallTimeout; iv != 0 && (iv < 100*time.Millisecond || iv > 10*time.Minute) {
		ck.bad("memnode.callTimeout", iv, "100ms to 10m (0 means 30s)")
	}
	if c.Metrics != "" {
		if why := checkHostPort(c.Metrics); why != "" {
			ck.bad("metrics", c.Metrics, why+", or empty for no metrics endpoint")
		}
	}
	if _, ok := logLevels[c.Log.Level]; !ok {
		ck.bad("log.level", c.Log.Level, "debug, info, warn or error")
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		ck.bad("log.format", c.Log.Format, "text or json")
	}
	return ck.err()
}

// CheckChannel checks that the channel has Org and that Primary is one of
// its peers; it returns the primary's address.
func (c *ComputeConfig) CheckChannel(ch *ChannelConfig) (string, error) {
	ck := &checker{file: c.file, root: c.root}
	peers := ch.PeersOf(c.Org)
	var names []string
	for _, p := range peers {
		if p.Name == c.Primary {
			return p.Address, nil
		}
		names = append(names, p.Name)
	}
	if len(peers) == 0 {
		ck.bad("org", c.Org, fmt.Sprintf("an org of channel %q with peers (file %s)", ch.Channel, ch.file))
	} else {
		ck.bad("primary", c.Primary, fmt.Sprintf("a peer of org %s in channel %q: one of %v", c.Org, ch.Channel, names))
	}
	return "", ck.err()
}

// asPeer is the compute node seen as a peer's node file, to load its
// identity and TLS material the way a peer's are loaded.
func (c *ComputeConfig) asPeer() *NodeConfig {
	return &NodeConfig{Role: "peer", Name: c.Name, Org: c.Org, Identity: c.Identity, TLS: c.TLS, file: c.file, root: c.root}
}

// Logger returns a logger writing to stderr with the node's name on every
// record.
func (c *ComputeConfig) Logger() *slog.Logger {
	return (&NodeConfig{Name: c.Name, Log: c.Log}).Logger()
}
