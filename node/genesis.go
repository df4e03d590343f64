package node

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"

	"github.com/strand-ledger/strand/api"
)

// MaxGenesisBytes bounds a genesis document a node accepts from the
// network (ChannelAdmin.Join): a channel's orgs, their CA certificates,
// endpoints and contracts fit in far less.
const MaxGenesisBytes = 1 << 20

// ChannelFromGenesis is the channel a genesis document
// (ChannelConfig.Genesis) defines, for a node that joins the channel
// while it runs: the document is all it has, CA certificates included.
// source names the document in errors (a file, or "the join request").
//
// The document must be canonical: ChannelFromGenesis re-encodes what it
// decoded and refuses a document whose bytes differ, since the orderer
// makes exactly these bytes block 0 and every peer checks block 0
// against them; a document edited by hand (reordered, reformatted, a
// field the decoder drops) would otherwise start a chain no other node
// of the channel agrees with.
func ChannelFromGenesis(doc []byte, source string) (*ChannelConfig, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrConfig, source, fmt.Sprintf(format, args...))
	}
	if len(doc) == 0 {
		return nil, bad("an empty genesis document; want the JSON strand channel create writes")
	}
	if len(doc) > MaxGenesisBytes {
		return nil, bad("a genesis document of %d bytes; at most %d", len(doc), MaxGenesisBytes)
	}
	var g genesisDoc
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, bad("not a genesis document (%v); want the JSON strand channel create writes", err)
	}
	if dec.More() {
		return nil, bad("data after the genesis document")
	}
	c := &ChannelConfig{Channel: g.Channel, Batch: g.Batch, Contracts: g.Contracts, Readers: g.Readers, Lifecycle: g.Lifecycle, file: source}
	switch g.Format {
	case api.Format1.GenesisName():
		c.Format = int(api.Format1)
	case api.Format2.GenesisName():
		c.Format = int(api.Format2)
	default:
		return nil, bad("format %q; want %q or %q", g.Format, api.Format2.GenesisName(), api.Format1.GenesisName())
	}
	for i, o := range g.Orgs {
		if len(o.CACerts) == 0 {
			return nil, bad("orgs[%d] (%s) has no CA certificate", i, o.ID)
		}
		for j, der := range o.CACerts {
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				return nil, bad("orgs[%d] (%s): CA certificate %d: %v", i, o.ID, j, err)
			}
			if !cert.IsCA {
				return nil, bad("orgs[%d] (%s): certificate %d (%q) is not a CA certificate", i, o.ID, j, cert.Subject.String())
			}
		}
		c.Orgs = append(c.Orgs, OrgConfig{ID: o.ID, CACerts: o.CACerts, Peers: o.Peers, Orderers: o.Orderers})
	}
	for i, ct := range c.Contracts {
		if ct.Runtime == RuntimeWasm || ct.Runtime == RuntimeExternal {
			return nil, bad("contracts[%d] (%s) has runtime %s, whose code each node reads from a file the genesis document does not carry; "+
				"create the channel with builtin contracts and deploy this one with strand contract deploy, or list the channel file in the node file",
				i, ct.Name, ct.Runtime)
		}
	}
	c.EnsureDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if !bytes.Equal(c.Genesis(), doc) {
		return nil, bad("not canonical: channel %q's document re-encodes to other bytes (hash %s); use the file strand channel create wrote, unchanged",
			c.Channel, c.Hash())
	}
	return c, nil
}
