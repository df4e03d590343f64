package node

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
	"github.com/strand-ledger/strand/orderer"
	"github.com/strand-ledger/strand/orderer/cut"
	"github.com/strand-ledger/strand/policy"
	"gopkg.in/yaml.v3"
)

// ChannelConfig is the channel file every node of a network shares. Its
// fields are documented in docs/config.md.
type ChannelConfig struct {
	// Channel is the channel's name, which every transaction carries.
	Channel string `yaml:"channel"`
	// Orgs are the organisations of the channel, in the order of the file.
	Orgs []OrgConfig `yaml:"orgs"`
	// Batch limits the blocks the ordering service cuts.
	Batch BatchConfig `yaml:"batch"`
	// Contracts are the contracts (state namespaces) the channel runs.
	Contracts []ContractConfig `yaml:"contracts"`
	// Format is the channel's transaction format (api.Format): 2, the
	// default, binds every endorsement to its transaction's channel and tx
	// id; 1 is only for chains created before format 2 existed, whose
	// genesis document it keeps. It is part of the genesis document, so a
	// chain is always validated by the rules it was written under.
	Format int `yaml:"format,omitempty"`
	// Readers is the policy a client or admin must satisfy to read the
	// chain: Deliver blocks from an orderer, subscribe to a peer's block
	// events. Empty means every member of the channel's orgs. Peers and
	// orderers of the channel's orgs always read (they need the chain).
	// Part of the genesis document only when set.
	Readers string `yaml:"readers,omitempty"`
	// Lifecycle is the policy a contract definition (strand contract
	// deploy/upgrade) must be signed by: org admins, such as
	// OutOf(2,'Org1.admin','Org2.admin'). Empty means the admins of a
	// majority of the orgs that have peers (Fabric's MAJORITY
	// Endorsement). Part of the genesis document only when set.
	Lifecycle string `yaml:"lifecycle,omitempty"`

	file string
	root *yaml.Node
}

// OrgConfig is one organisation.
type OrgConfig struct {
	// ID names the org in policies ('Org1.peer') and in identities.
	ID string `yaml:"id"`
	// CA is the PEM file of the org's CA certificates (one or more),
	// relative to the channel file. LoadChannel resolves it.
	CA string `yaml:"ca"`
	// Peers and Orderers are the org's nodes.
	Peers    []EndpointConfig `yaml:"peers,omitempty"`
	Orderers []EndpointConfig `yaml:"orderers,omitempty"`
	// CACerts are the DER certificates read from CA by LoadChannel. A
	// config built in code sets them itself.
	CACerts [][]byte `yaml:"-"`
}

// EndpointConfig is one node of an org.
type EndpointConfig struct {
	Name    string `yaml:"name"`
	Address string `yaml:"address"` // host:port other nodes and clients dial
	// Cluster, for an orderer of a Raft cluster, is the host:port the
	// other orderers dial for Raft messages and forwarded transactions
	// (a route of its own, a proxy); default Address. The orderer serves
	// the cluster service on its listener either way. Omitted from the
	// genesis document when empty, so channels written before it keep
	// their hash.
	Cluster string `yaml:"cluster,omitempty" json:",omitempty"`
}

// BatchConfig limits the blocks the ordering service cuts: a block is cut
// when it holds MaxTxs transactions, when the next transaction would take it
// over MaxBytes, and, by Mode: Timeout after its first transaction arrived
// ("block"), or as soon as the orderer's seal stage is free ("stream").
type BatchConfig struct {
	// Mode is "block" or "stream" (default "block"). The genesis document
	// leaves out "block", so channels written before modes existed keep
	// their hash.
	Mode     string        `yaml:"mode,omitempty" json:",omitempty"`
	MaxTxs   int           `yaml:"maxTxs"`   // default 100, 1 to 100000
	MaxBytes int           `yaml:"maxBytes"` // default 10 MiB, 1 KiB to 256 MiB
	Timeout  time.Duration `yaml:"timeout"`  // default 2ms, 1ms to 10m
	// Checkpoint, if set, has the orderers sign only checkpoint blocks and
	// the peers accept the blocks between them over the orderers'
	// authenticated streams (orderer.Checkpoints, docs/streaming.md).
	// Omitted from the genesis document when unset, so channels written
	// before it keep their hash.
	Checkpoint *SignCheckpointConfig `yaml:"checkpoint,omitempty" json:",omitempty"`
}

// SignCheckpointConfig says which blocks the orderers sign: every Blocks-th,
// and the first one Interval after the last signed one. At least one is
// needed.
type SignCheckpointConfig struct {
	Blocks   int           `yaml:"blocks,omitempty" json:",omitempty"`   // 0 (no count rule) to 1000000
	Interval time.Duration `yaml:"interval,omitempty" json:",omitempty"` // 0 (no time rule) or 1ms to 1h
}

// OrdererCheckpoints converts the checkpoint section for the ordering
// service; the zero value (no section) signs every block.
func (c *ChannelConfig) OrdererCheckpoints() orderer.Checkpoints {
	if c.Batch.Checkpoint == nil {
		return orderer.Checkpoints{}
	}
	return orderer.Checkpoints{Blocks: c.Batch.Checkpoint.Blocks, Interval: c.Batch.Checkpoint.Interval}
}

// Batch defaults, the ordering service's.
const (
	DefaultMaxTxs   = cut.DefaultMaxTxs
	DefaultMaxBytes = cut.DefaultMaxBytes
	DefaultTimeout  = cut.DefaultTimeout
)

// OrdererBatch converts the batch section for the ordering service.
func (c *ChannelConfig) OrdererBatch() cut.Config {
	return cut.Config{Mode: cut.Mode(c.Batch.Mode), MaxTxs: c.Batch.MaxTxs, MaxBytes: c.Batch.MaxBytes, Timeout: c.Batch.Timeout}
}

// ContractConfig is one contract and its endorsement policy.
type ContractConfig struct {
	Name   string `yaml:"name"`   // state namespace, see api.CheckNamespace
	Policy string `yaml:"policy"` // policy.Parse syntax, such as AND('Org1.peer','Org2.peer')
	// Runtime runs the contract: "builtin" (the default: compiled into
	// the binary, found by Name) or "wasm" (a WebAssembly module,
	// docs/contracts.md). Until contract lifecycle lands, a channel file
	// names a module by Code and Hash.
	Runtime string `yaml:"runtime,omitempty" json:",omitempty"`
	// Code (wasm) is the module's file, relative to the channel file;
	// LoadChannel resolves it. Each node reads its own copy, so the path
	// is not part of the genesis document; Hash is.
	Code string `yaml:"code,omitempty" json:"-"`
	// Hash (wasm) is the module's SHA-256 in lowercase hex. A peer whose
	// Code has another hash refuses to start.
	Hash string `yaml:"hash,omitempty" json:",omitempty"`
}

// Contract runtimes.
const (
	RuntimeBuiltin  = "builtin"
	RuntimeWasm     = "wasm"
	RuntimeExternal = "external" // code: the connection package (contract/external.Package, JSON)
)

// PeerEndpoint is a peer of the channel.
type PeerEndpoint struct{ Name, Org, Address string }

// OrdererEndpoint is an orderer of the channel. Cluster is where the
// other orderers dial it: EndpointConfig.Cluster, or Address.
type OrdererEndpoint struct{ Name, Org, Address, Cluster string }

// LoadChannel reads, defaults and validates a channel file, then reads the
// CA certificates of its orgs.
func LoadChannel(path string) (*ChannelConfig, error) {
	c := &ChannelConfig{}
	root, err := readYAML(path, c)
	if err != nil {
		return nil, err
	}
	c.file, c.root = path, root
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("node: %s: %w", path, err)
	}
	for i := range c.Orgs {
		c.Orgs[i].CA = resolve(dir, c.Orgs[i].CA)
	}
	for i := range c.Contracts {
		if c.Contracts[i].Code != "" {
			c.Contracts[i].Code = resolve(dir, c.Contracts[i].Code)
		}
	}
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	ck := &checker{file: path, root: root}
	for i := range c.Orgs {
		o := &c.Orgs[i]
		certs, why := readCACerts(o.CA, o.ID)
		if why != "" {
			ck.bad(fmt.Sprintf("orgs[%d].ca", i), o.CA, why)
		}
		o.CACerts = certs
	}
	if err := ck.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// readCACerts reads the CERTIFICATE blocks of a PEM file. On failure it
// returns what the file should have been.
func readCACerts(path, org string) ([][]byte, string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Sprintf("a readable PEM file of CA certificates (%v)", err)
	}
	var certs [][]byte
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Sprintf("PEM certificates that parse (certificate %d: %v)", len(certs), err)
		}
		if !c.IsCA {
			return nil, fmt.Sprintf("CA certificates, but %q is not a CA", c.Subject.String())
		}
		certs = append(certs, b.Bytes)
	}
	if len(certs) == 0 {
		return nil, fmt.Sprintf("a PEM file holding the CA certificates of org %q, found no CERTIFICATE block", org)
	}
	return certs, ""
}

// EnsureDefaults fills in the zero batch fields.
func (c *ChannelConfig) EnsureDefaults() {
	if c.Batch.Mode == "" {
		c.Batch.Mode = string(cut.ModeBlock)
	}
	if c.Format == 0 {
		c.Format = int(api.FormatLatest)
	}
	if c.Batch.MaxTxs == 0 {
		c.Batch.MaxTxs = DefaultMaxTxs
	}
	if c.Batch.MaxBytes == 0 {
		c.Batch.MaxBytes = DefaultMaxBytes
	}
	if c.Batch.Timeout == 0 {
		c.Batch.Timeout = DefaultTimeout
	}
}

// Validate reports every invalid field. It reads no file: the CA
// certificates are checked by LoadChannel and Registry.
func (c *ChannelConfig) Validate() error {
	ck := &checker{file: c.file, root: c.root}
	if c.Channel == "" || len(c.Channel) > 64 || !isName(c.Channel) {
		ck.bad("channel", c.Channel, "1 to 64 letters, digits, '.', '-' or '_'")
	}
	if f := api.Format(c.Format); f != api.Format1 && f != api.Format2 {
		ck.bad("format", c.Format, "2 (endorsements bound to their transaction; the default) or 1 (only for a chain created before format 2)")
	}
	if len(c.Orgs) == 0 {
		ck.bad("orgs", "[]", "at least one org")
	}
	orgs := map[string]bool{}
	names := map[string]string{} // node name -> field
	addrs := map[string]string{} // address -> field
	orderers := 0
	for i, o := range c.Orgs {
		f := fmt.Sprintf("orgs[%d]", i)
		switch {
		case o.ID == "" || len(o.ID) > 64 || !isName(o.ID):
			ck.bad(f+".id", o.ID, "1 to 64 letters, digits, '.', '-' or '_' (the org in policies such as 'Org1.peer')")
		case orgs[o.ID]:
			ck.bad(f+".id", o.ID, "an org ID not used by another org")
		}
		orgs[o.ID] = true
		if o.CA == "" && len(o.CACerts) == 0 {
			ck.bad(f+".ca", o.CA, "the path of the org's CA certificate PEM file")
		}
		for j, ep := range o.Peers {
			checkEndpoint(ck, fmt.Sprintf("%s.peers[%d]", f, j), ep, names, addrs)
			if ep.Cluster != "" {
				ck.bad(fmt.Sprintf("%s.peers[%d].cluster", f, j), ep.Cluster, "no cluster address: only orderers have one")
			}
		}
		for j, ep := range o.Orderers {
			checkEndpoint(ck, fmt.Sprintf("%s.orderers[%d]", f, j), ep, names, addrs)
			if ep.Cluster != "" {
				checkAddress(ck, fmt.Sprintf("%s.orderers[%d].cluster", f, j), ep.Cluster, addrs)
			}
		}
		orderers += len(o.Orderers)
	}
	if orderers == 0 && len(c.Orgs) > 0 {
		ck.bad("orgs", fmt.Sprintf("%d orgs with no orderers", len(c.Orgs)), "at least one org with an orderers list")
	}
	checkBatch(ck, c.Batch)
	if err := c.OrdererBatch().Validate(); err != nil && len(ck.errs) == 0 {
		ck.bad("batch", fmt.Sprintf("%+v", c.Batch), err.Error())
	}
	if c.Readers != "" {
		if p, err := policy.Parse(c.Readers); err != nil {
			ck.bad("readers", c.Readers, fmt.Sprintf("a valid policy such as OR('Org1.member','Org2.client') (%v)", err))
		} else {
			for _, org := range p.Orgs() {
				if !orgs[org] {
					ck.bad("readers", c.Readers, fmt.Sprintf("a policy naming only orgs of the channel; org %q is not one of %s", org, c.orgList()))
				}
			}
		}
	}
	if c.Lifecycle != "" {
		if p, err := policy.Parse(c.Lifecycle); err != nil {
			ck.bad("lifecycle", c.Lifecycle, fmt.Sprintf("a valid policy over org admins such as OutOf(2,'Org1.admin','Org2.admin') (%v)", err))
		} else {
			for _, org := range p.Orgs() {
				if !orgs[org] {
					ck.bad("lifecycle", c.Lifecycle, fmt.Sprintf("a policy naming only orgs of the channel; org %q is not one of %s", org, c.orgList()))
				}
			}
		}
	}
	contracts := map[string]bool{}
	for i, ct := range c.Contracts {
		f := fmt.Sprintf("contracts[%d]", i)
		if err := api.CheckNamespace(ct.Name); err != nil || strings.HasPrefix(ct.Name, "_") {
			ck.bad(f+".name", ct.Name, "1 to 128 bytes with no NUL byte, not starting with '_' (reserved for system namespaces)")
		} else if contracts[ct.Name] {
			ck.bad(f+".name", ct.Name, "a contract name not used by another contract")
		}
		contracts[ct.Name] = true
		checkRuntime(ck, f, ct)
		p, err := policy.Parse(ct.Policy)
		if err != nil {
			ck.bad(f+".policy", ct.Policy, fmt.Sprintf("a valid endorsement policy (%v)", err))
			continue
		}
		for _, org := range p.Orgs() {
			if !orgs[org] {
				ck.bad(f+".policy", ct.Policy, fmt.Sprintf("a policy naming only orgs of the channel; org %q is not one of %s", org, c.orgList()))
			}
		}
	}
	return ck.err()
}

// checkRuntime checks a contract's runtime fields.
func checkRuntime(ck *checker, f string, ct ContractConfig) {
	switch ct.Runtime {
	case "", RuntimeBuiltin:
		if ct.Code != "" || ct.Hash != "" {
			ck.bad(f+".runtime", ct.Runtime, "wasm when code or hash is set (a built-in contract has neither)")
		}
	case RuntimeWasm:
		if ct.Code == "" {
			ck.bad(f+".code", ct.Code, "the path of the contract's WebAssembly module, relative to the channel file")
		}
		if len(ct.Hash) != 64 || strings.Trim(ct.Hash, "0123456789abcdef") != "" {
			ck.bad(f+".hash", ct.Hash, "the module's SHA-256 as 64 lowercase hex digits (sha256sum prints it)")
		}
	case RuntimeExternal:
		if ct.Code == "" {
			ck.bad(f+".code", ct.Code, "the path of the contract's connection package (JSON: address, root_cert), relative to the channel file")
		}
		if len(ct.Hash) != 64 || strings.Trim(ct.Hash, "0123456789abcdef") != "" {
			ck.bad(f+".hash", ct.Hash, "the connection package's SHA-256 as 64 lowercase hex digits (sha256sum prints it)")
		}
	default:
		ck.bad(f+".runtime", ct.Runtime, "builtin (the default), wasm or external")
	}
}

func checkEndpoint(ck *checker, f string, ep EndpointConfig, names, addrs map[string]string) {
	switch {
	case ep.Name == "" || len(ep.Name) > 64 || !isName(ep.Name):
		ck.bad(f+".name", ep.Name, "1 to 64 letters, digits, '.', '-' or '_'")
	case names[ep.Name] != "":
		ck.bad(f+".name", ep.Name, "a node name not used elsewhere, but "+names[ep.Name]+" has it")
	default:
		names[ep.Name] = f + ".name"
	}
	checkAddress(ck, f+".address", ep.Address, addrs)
}

// checkAddress checks that field f is a host:port used by no other field.
func checkAddress(ck *checker, f, addr string, addrs map[string]string) {
	switch why := checkHostPort(addr); {
	case why != "":
		ck.bad(f, addr, why)
	case addrs[addr] != "":
		ck.bad(f, addr, "an address not used elsewhere, but "+addrs[addr]+" has it")
	default:
		addrs[addr] = f
	}
}

func checkBatch(ck *checker, b BatchConfig) {
	if m := cut.Mode(b.Mode); m != cut.ModeBlock && m != cut.ModeStream {
		ck.bad("batch.mode", b.Mode, "block or stream (empty means block)")
	}
	if b.MaxTxs < 1 || b.MaxTxs > 100000 {
		ck.bad("batch.maxTxs", b.MaxTxs, "1 to 100000 (0 means 100)")
	}
	if b.MaxBytes < 1<<10 || b.MaxBytes > 256<<20 {
		ck.bad("batch.maxBytes", b.MaxBytes, "1024 to 268435456 (0 means 10485760)")
	}
	if b.Timeout < time.Millisecond || b.Timeout > 10*time.Minute {
		ck.bad("batch.timeout", b.Timeout.String(), "a duration from 1ms to 10m such as 2ms (0 means 2ms)")
	}
	if c := b.Checkpoint; c != nil {
		if c.Blocks < 0 || c.Blocks > 1_000_000 {
			ck.bad("batch.checkpoint.blocks", c.Blocks, "0 (no count rule) to 1000000")
		}
		if c.Interval != 0 && (c.Interval < time.Millisecond || c.Interval > time.Hour) {
			ck.bad("batch.checkpoint.interval", c.Interval.String(), "0 (no time rule) or a duration from 1ms to 1h such as 200ms")
		}
		if c.Blocks == 0 && c.Interval == 0 {
			ck.bad("batch.checkpoint", "{}", "blocks, interval or both (leave the section out to sign every block)")
		}
	}
}

func (c *ChannelConfig) orgList() string {
	ids := make([]string, len(c.Orgs))
	for i, o := range c.Orgs {
		ids[i] = o.ID
	}
	return fmt.Sprintf("%q", ids)
}

// Registry builds the identity registry of the channel's orgs from their
// CA certificates.
func (c *ChannelConfig) Registry() (*identity.Registry, error) {
	orgs := make([]identity.Org, len(c.Orgs))
	for i, o := range c.Orgs {
		if len(o.CACerts) == 0 {
			return nil, fmt.Errorf("node: channel %q: org %q has no CA certificates loaded (load the file with LoadChannel, or set CACerts)", c.Channel, o.ID)
		}
		orgs[i] = identity.Org{ID: o.ID, CACerts: o.CACerts}
	}
	r, err := identity.NewRegistry(orgs)
	if err != nil {
		return nil, fmt.Errorf("node: channel %q: %w", c.Channel, err)
	}
	return r, nil
}

// Policies maps each contract to its parsed policy. Contracts whose policy
// does not parse (Validate reports them) are left out.
func (c *ChannelConfig) Policies() map[string]*policy.Policy {
	m := make(map[string]*policy.Policy, len(c.Contracts))
	for _, ct := range c.Contracts {
		if p, err := policy.Parse(ct.Policy); err == nil {
			m[ct.Name] = p
		}
	}
	return m
}

// ReadRule is the read policy the nodes apply: the parsed Readers
// policy as written, or, for empty Readers (the default, every member
// org), every member of the orgs in force at the node's committed
// height, so that it follows membership updates: an added org's members
// read from the block after its update, a removed org's no longer.
func (c *ChannelConfig) ReadRule() caller.Readers {
	if c.Readers == "" {
		return caller.Readers{Members: true}
	}
	return caller.Readers{Policy: c.ReadPolicy()}
}

// ReadPolicy is the parsed Readers policy; empty Readers gives
// OR('<org>.member', ...) over every org of the channel file (the
// genesis orgs). Nil if Readers does not parse (Validate reports it).
func (c *ChannelConfig) ReadPolicy() *policy.Policy {
	expr := c.Readers
	if expr == "" {
		members := make([]string, len(c.Orgs))
		for i, o := range c.Orgs {
			members[i] = "'" + o.ID + ".member'"
		}
		expr = "OR(" + strings.Join(members, ",") + ")"
	}
	p, err := policy.Parse(expr)
	if err != nil {
		return nil
	}
	return p
}

// OrdererOrgs lists the orgs that have orderers, in file order.
func (c *ChannelConfig) OrdererOrgs() []string {
	var ids []string
	for _, o := range c.Orgs {
		if len(o.Orderers) > 0 {
			ids = append(ids, o.ID)
		}
	}
	return ids
}

// Committer returns what the commit pipeline needs of the channel.
func (c *ChannelConfig) Committer() (committer.Channel, error) {
	reg, err := c.Registry()
	if err != nil {
		return committer.Channel{}, err
	}
	var unendorsing []string
	for _, o := range c.Orgs {
		if len(o.Peers) == 0 {
			unendorsing = append(unendorsing, o.ID)
		}
	}
	return committer.Channel{Name: c.Channel, Registry: reg, OrdererOrgs: c.OrdererOrgs(), Policies: c.Policies(), Lifecycle: c.LifecyclePolicy(),
		LifecycleFollows: c.Lifecycle == "", Unendorsing: unendorsing,
		Genesis: c.Genesis(), Checkpoints: c.OrdererCheckpoints().Enabled(), Format: c.TxFormat()}, nil
}

// LifecyclePolicy is the parsed Lifecycle policy; empty Lifecycle gives
// lifecycle.DefaultPolicy over the orgs that have peers. Nil if it does
// not parse (Validate reports it) or no org has peers.
func (c *ChannelConfig) LifecyclePolicy() *policy.Policy {
	if c.Lifecycle != "" {
		p, err := policy.Parse(c.Lifecycle)
		if err != nil {
			return nil
		}
		return p
	}
	var orgs []string
	for _, o := range c.Orgs {
		if len(o.Peers) > 0 {
			orgs = append(orgs, o.ID)
		}
	}
	p, err := lifecycle.DefaultPolicy(orgs)
	if err != nil {
		return nil
	}
	return p
}

// PeersOf returns the peers of org, in file order.
func (c *ChannelConfig) PeersOf(org string) []PeerEndpoint {
	var eps []PeerEndpoint
	for _, o := range c.Orgs {
		if o.ID == org {
			for _, p := range o.Peers {
				eps = append(eps, PeerEndpoint{Name: p.Name, Org: o.ID, Address: p.Address})
			}
		}
	}
	return eps
}

// Orderers returns every orderer of the channel, in file order.
func (c *ChannelConfig) Orderers() []OrdererEndpoint {
	var eps []OrdererEndpoint
	for _, o := range c.Orgs {
		for _, p := range o.Orderers {
			cluster := p.Cluster
			if cluster == "" {
				cluster = p.Address
			}
			eps = append(eps, OrdererEndpoint{Name: p.Name, Org: o.ID, Address: p.Address, Cluster: cluster})
		}
	}
	return eps
}

// Genesis returns the channel's genesis document: a canonical JSON encoding
// of everything that defines the channel (orgs with their CA certificates
// and endpoints, batch parameters, contracts with their policies in
// canonical form). The orderer makes it the only transaction of block 0;
// every peer checks that block 0 carries exactly this document, so nodes
// configured for different channels can never share a chain. It is also
// what a node joins a channel from at runtime (ChannelFromGenesis).
func (c *ChannelConfig) Genesis() []byte {
	canon := genesisDoc{Format: c.TxFormat().GenesisName(), Channel: c.Channel, Batch: c.Batch}
	if p := c.ReadPolicy(); c.Readers != "" && p != nil {
		canon.Readers = p.String()
	}
	if p := c.LifecyclePolicy(); c.Lifecycle != "" && p != nil {
		canon.Lifecycle = p.String()
	}
	if canon.Batch.Mode == string(cut.ModeBlock) {
		canon.Batch.Mode = "" // omitted: the hash of a block-mode channel predates modes
	}
	for _, o := range c.Orgs {
		canon.Orgs = append(canon.Orgs, genesisOrg{o.ID, o.CACerts, o.Peers, o.Orderers})
	}
	for _, ct := range c.Contracts {
		if p, err := policy.Parse(ct.Policy); err == nil {
			ct.Policy = p.String()
		}
		if ct.Runtime == RuntimeBuiltin {
			ct.Runtime = "" // omitted: channels written before runtimes keep their hash
		}
		canon.Contracts = append(canon.Contracts, ct)
	}
	b, err := json.Marshal(canon)
	if err != nil {
		panic(err) // plain strings, ints and byte slices always marshal
	}
	return b
}

// genesisDoc is the genesis document's JSON (ChannelConfig.Genesis); its
// field order and names are part of every channel's hash.
type genesisDoc struct {
	Format    string
	Channel   string
	Orgs      []genesisOrg
	Batch     BatchConfig
	Contracts []ContractConfig
	Readers   string `json:",omitempty"`
	Lifecycle string `json:",omitempty"`
}

type genesisOrg struct {
	ID              string
	CACerts         [][]byte
	Peers, Orderers []EndpointConfig
}

// TxFormat is the channel's transaction format (Format; zero before
// EnsureDefaults means the latest).
func (c *ChannelConfig) TxFormat() api.Format {
	if c.Format == 0 {
		return api.FormatLatest
	}
	return api.Format(c.Format)
}

// Hash returns the SHA-256 of the genesis document, in hex.
func (c *ChannelConfig) Hash() string {
	sum := sha256.Sum256(c.Genesis())
	return hex.EncodeToString(sum[:])
}

// isName reports whether s holds only letters, digits, '.', '-' and '_'.
func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
