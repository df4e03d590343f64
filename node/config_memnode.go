package node

import (
	"fmt"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/strand-ledger/strand/ledger/statedb/tiered"
	"github.com/strand-ledger/strand/memnode"
)

// MemnodeConfig is the file of a memory node (`strand memnode start
// --config memnode.yaml`): the memory and storage tiers of FlexChain's
// disaggregated peer, served to one peer's state database over mutual
// TLS. 0 and "" mean the default.
type MemnodeConfig struct {
	// Listen is the host:port the memory node serves on.
	Listen string `yaml:"listen"`
	// DataDir holds the storage tier (Pebble, in state/) and the lock
	// of the process that serves it (strand.pid).
	DataDir string `yaml:"dataDir"`
	// MemoryMB is the memory tier's byte limit. Default 256; 1 to 1048576.
	MemoryMB int `yaml:"memoryMB"`
	// FlushBlocks and FlushInterval: the memory tier is written through
	// to storage every FlushBlocks blocks or FlushInterval, whichever
	// comes first; what a SIGKILL loses (and the peer re-applies).
	FlushBlocks   int           `yaml:"flushBlocks"`   // default 64; 1 to 1000000
	FlushInterval time.Duration `yaml:"flushInterval"` // default 1s; 1ms to 1h
	// StorageCacheMB is Pebble's block cache. Default 128; 1 to 65536.
	StorageCacheMB int `yaml:"storageCacheMB"`
	// MaxMessageMB bounds one message (a state batch of a group of
	// blocks). Default 256; 1 to 2047.
	MaxMessageMB int `yaml:"maxMessageMB"`
	// Per-client limits (a client is a TLS certificate's common name):
	// running calls (Apply not counted) and change-feed (Watch)
	// streams, and the feed streams of all clients. Defaults 64, 8,
	// 256; 1 to 65536.
	MaxCallsPerClient   int `yaml:"maxCallsPerClient"`
	MaxWatchesPerClient int `yaml:"maxWatchesPerClient"`
	MaxWatches          int `yaml:"maxWatches"`
	// WatchBufferKB bounds what the node queues for one feed subscriber
	// (a compute node); one further behind is told to resync, dropping
	// its cache. Default 1024; 4 to 1048576.
	WatchBufferKB int `yaml:"watchBufferKB"`
	// TLS is the memory node's key pair; CAs are the PEM CA certificates
	// of the orgs whose peers may connect (mutual TLS).
	TLS KeyPair  `yaml:"tls"`
	CAs []string `yaml:"cas"`
	// Writer is the common name (node name) of the one peer whose
	// committer writes to this memory node, such as peer0.Org1; empty:
	// the first peer to write, until the memory node restarts. Writes
	// from any other peer are refused: one memory node serves one peer.
	Writer string `yaml:"writer"`
	// Cores is how many cores the node runs Go code on at once
	// (GOMAXPROCS). 0: Go's default, the machine's cores or its cgroup's
	// CPU limit; 1 to 1024.
	Cores int `yaml:"cores,omitempty"`
	// Metrics is the host:port of the Prometheus endpoint; empty: none.
	Metrics string `yaml:"metrics"`
	// Log configures the logger.
	Log LogConfig `yaml:"log"`

	file string
	root *yaml.Node
}

// LoadMemnode reads a memory node file, fills in the defaults, resolves
// its paths against the file's directory and validates it.
func LoadMemnode(path string) (*MemnodeConfig, error) {
	m := &MemnodeConfig{}
	root, err := readYAML(path, m)
	if err != nil {
		return nil, err
	}
	m.file, m.root = path, root
	m.EnsureDefaults()
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("node: %s: %w", path, err)
	}
	for _, p := range []*string{&m.DataDir, &m.TLS.Cert, &m.TLS.Key} {
		if *p != "" {
			*p = resolve(dir, *p)
		}
	}
	for i := range m.CAs {
		m.CAs[i] = resolve(dir, m.CAs[i])
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// EnsureDefaults fills in zero fields.
func (m *MemnodeConfig) EnsureDefaults() {
	if m.MemoryMB == 0 {
		m.MemoryMB = tiered.DefaultMemoryBytes >> 20
	}
	if m.StorageCacheMB == 0 {
		m.StorageCacheMB = 128
	}
	if m.MaxMessageMB == 0 {
		m.MaxMessageMB = 256
	}
	l := m.Limits()
	l.EnsureDefaults()
	m.MaxCallsPerClient, m.MaxWatchesPerClient, m.MaxWatches = l.MaxCallsPerClient, l.MaxWatchesPerClient, l.MaxWatches
	if m.WatchBufferKB == 0 {
		m.WatchBufferKB = memnode.DefaultWatchBufferBytes >> 10
	}
	if m.Log.Level == "" {
		m.Log.Level = "info"
	}
	if m.Log.Format == "" {
		m.Log.Format = "text"
	}
}

// Validate reports every invalid field.
func (m *MemnodeConfig) Validate() error {
	ck := &checker{file: m.file, root: m.root}
	if why := checkHostPort(m.Listen); why != "" {
		ck.bad("listen", m.Listen, why)
	}
	for _, f := range []struct{ field, path string }{{"dataDir", m.DataDir}, {"tls.cert", m.TLS.Cert}, {"tls.key", m.TLS.Key}} {
		if f.path == "" {
			ck.bad(f.field, f.path, "a path, relative to this file or absolute")
		}
	}
	if len(m.CAs) == 0 {
		ck.bad("cas", "", "at least one PEM CA certificate file: the orgs whose peers may connect")
	}
	inRange := func(field string, v, lo, hi int, def string) {
		if v < lo || v > hi {
			ck.bad(field, v, fmt.Sprintf("%d to %d (0 means %s)", lo, hi, def))
		}
	}
	inRange("memoryMB", m.MemoryMB, 1, 1<<20, "256")
	inRange("storageCacheMB", m.StorageCacheMB, 1, 65536, "128")
	inRange("maxMessageMB", m.MaxMessageMB, 1, 2047, "256")
	inRange("maxCallsPerClient", m.MaxCallsPerClient, 1, 1<<16, fmt.Sprint(memnode.DefaultMaxCallsPerClient))
	inRange("maxWatchesPerClient", m.MaxWatchesPerClient, 1, 1<<16, fmt.Sprint(memnode.DefaultMaxWatchesPerClient))
	inRange("maxWatches", m.MaxWatches, 1, 1<<16, fmt.Sprint(memnode.DefaultMaxWatches))
	inRange("watchBufferKB", m.WatchBufferKB, 4, 1<<20, "1024")
	if m.FlushBlocks != 0 {
		inRange("flushBlocks", m.FlushBlocks, 1, 1e6, "64")
	}
	if iv := m.FlushInterval; iv != 0 && (iv < time.Millisecond || iv > time.Hour) {
		ck.bad("flushInterval", iv, "1ms to 1h (0 means 1s)")
	}
	if m.Cores != 0 {
		inRange("cores", m.Cores, 1, 1024, "Go's default")
	}
	if m.Metrics != "" {
		if why := checkHostPort(m.Metrics); why != "" {
			ck.bad("metrics", m.Metrics, why+", or empty for no metrics endpoint")
		}
	}
	if _, ok := logLevels[m.Log.Level]; !ok {
		ck.bad("log.level", m.Log.Level, "debug, info, warn or error")
	}
	if m.Log.Format != "text" && m.Log.Format != "json" {
		ck.bad("log.format", m.Log.Format, "text or json")
	}
	return ck.err()
}

// Limits converts the file's client limits to the server's.
func (m *MemnodeConfig) Limits() memnode.Limits {
	return memnode.Limits{MaxCallsPerClient: m.MaxCallsPerClient, MaxWatchesPerClient: m.MaxWatchesPerClient, MaxWatches: m.MaxWatches}
}

// Tiers converts the file's sizes to the tiers' options.
func (m *MemnodeConfig) Tiers() tiered.Options {
	o := tiered.Options{NoCache: true, MemoryBytes: int64(m.MemoryMB) << 20,
		FlushBlocks: uint64(max(0, m.FlushBlocks)), FlushInterval: m.FlushInterval}
	o.Storage.CacheSize = int64(m.StorageCacheMB) << 20
	return o
}
