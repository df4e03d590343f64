package main

import (
	"context"
	"encoding/pem"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
)

type orgFlags struct {
	dir, org, at, out string
	ca, tlsCA         []string
	peers             []string // NAME=HOST:PORT
	signAs            []string
	timeout           time.Duration
}

// channelAddOrgCmd is `strand channel add-org`: a membership update that
// adds an org to the running channel.
func channelAddOrgCmd() *cobra.Command {
	var f orgFlags
	cmd := &cobra.Command{
		Use:   "add-org --org ORG --ca CA.pem [--tls-ca TLSCA.pem] [--peer NAME=HOST:PORT] [--out FILE]",
		Short: "Add an org to the running channel: a membership update carrying its definition, signed by a majority of the member orgs' admins",
		Long: "Builds a membership update that adds --org, defined by its CA certificates (--ca, PEM; its TLS CA\n" +
			"certificates --tls-ca, default the same) and its peers (--peer: the other orgs' gateways ask them to\n" +
			"endorse for a policy that names the org), with the sequence the peers report, signed by the admins of\n" +
			"the orgs --sign-as names (a majority of the channel's member orgs; the new org does not sign its own\n" +
			"admission); writes it to --out if set (a peer of the new org names that file as `join:` in its node\n" +
			"file); submits it to an orderer and waits until every peer has it in force. From the block after the\n" +
			"one that carries it, the org's members are members of the channel (docs/membership.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.org == "" || len(f.ca) == 0 {
				return fmt.Errorf("want --org ORG and at least one --ca FILE")
			}
			if len(f.tlsCA) == 0 {
				f.tlsCA = f.ca
			}
			o := api.MembersOrg{ID: f.org}
			var err error
			if o.CACerts, err = readPEMCerts("--ca", f.ca); err != nil {
				return err
			}
			if o.TLSCACerts, err = readPEMCerts("--tls-ca", f.tlsCA); err != nil {
				return err
			}
			if o.Peers, err = parsePeers(f.peers); err != nil {
				return err
			}
			if _, err := identity.ParseOrgDef(o.ID, o.CACerts, o.TLSCACerts); err != nil {
				return err
			}
			return runOrgUpdate(cmd, f, "added", &api.MembersUpdate{Add: []api.MembersOrg{o}})
		},
	}
	orgUpdateFlags(cmd, &f, "the org to add (its ID in policies and identities)")
	cmd.Flags().StringSliceVar(&f.ca, "ca", nil, "PEM file of the org's CA certificates (repeatable)")
	cmd.Flags().StringSliceVar(&f.tlsCA, "tls-ca", nil, "PEM file of the org's TLS CA certificates (repeatable; default --ca)")
	cmd.Flags().StringVar(&f.out, "out", "", "also write the signed update here (a new org's peer joins with it)")
	cmd.Flags().StringSliceVar(&f.peers, "peer", nil, "NAME=HOST:PORT of a peer of the org that other orgs' gateways ask to endorse (repeatable)")
	return cmd
}

// parsePeers parses --peer NAME=HOST:PORT values and checks them as
// the update's decoder will (api.CheckOrgPeers).
func parsePeers(vals []string) ([]api.MembersPeer, error) {
	var out []api.MembersPeer
	for _, v := range vals {
		name, addr, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("--peer %q: want NAME=HOST:PORT", v)
		}
		out = append(out, api.MembersPeer{Name: name, Address: addr})
	}
	if err := api.CheckOrgPeers(out); err != nil {
		return nil, fmt.Errorf("--peer: %w", err)
	}
	return out, nil
}

// channelRemoveOrgCmd is `strand channel remove-org`: a membership update
// that removes an org from the running channel.
func channelRemoveOrgCmd() *cobra.Command {
	var f orgFlags
	cmd := &cobra.Command{
		Use:   "remove-org --org ORG",
		Short: "Remove an org from the running channel: a membership update signed by a majority of the orgs that stay",
		Long: "Builds a membership update that removes --org, with the sequence the peers report, signed by the\n" +
			"admins of the orgs --sign-as names (default: every other org with an admin in the network; the removed\n" +
			"org's admin does not count), submits it to an orderer and waits until the peers of the other orgs have\n" +
			"it in force. From the block after the one that carries it, every node refuses the org's identities:\n" +
			"proposals, submissions, endorsements, validation and TLS handshakes (docs/membership.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.org == "" {
				return fmt.Errorf("want --org ORG")
			}
			return runOrgUpdate(cmd, f, "removed", &api.MembersUpdate{Remove: []string{f.org}})
		},
	}
	orgUpdateFlags(cmd, &f, "the org to remove")
	return cmd
}

func orgUpdateFlags(cmd *cobra.Command, f *orgFlags, org string) {
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", defaultNetDir, "the network's directory")
	fl.StringVar(&f.org, "org", "", org)
	fl.StringSliceVar(&f.signAs, "sign-as", nil, "orgs whose admins sign (default: every org with an admin in the network but --org)")
	fl.StringVar(&f.at, "at", "", "the orderer to submit to (default: the channel's first current orderer)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up after this long")
}

// runOrgUpdate completes u (channel, sequence), has it signed, submits
// it and waits until the peers of the orgs that stay have it in force.
func runOrgUpdate(cmd *cobra.Command, f orgFlags, did string, u *api.MembersUpdate) error {
	lay, err := loadNet(f.dir)
	if err != nil {
		return err
	}
	return orgUpdate(cmd, lay, f, did, u)
}

// orgUpdate is runOrgUpdate on the network lay (net add-org passes the
// layout with the new org's nodes, not saved yet: they are --org's, so
// they neither sign nor are waited for).
func orgUpdate(cmd *cobra.Command, lay *localnet.Layout, f orgFlags, did string, u *api.MembersUpdate) error {
	start := time.Now()
	signAs := f.signAs
	if len(signAs) == 0 {
		for _, a := range lay.Admins {
			if a.Org != f.org {
				signAs = append(signAs, a.Org)
			}
		}
	}
	signers, err := adminSigners(lay, signAs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	admin, peer, err := askAs(lay, signers)
	if err != nil {
		return err
	}
	info, err := peerRevocations(ctx, lay, admin, peer.Name, "")
	if err != nil {
		return err
	}
	if u.Channel, err = channelName(lay.Channel); err != nil {
		return err
	}
	u.Sequence = info.Sequence
	raw, err := signMembersUpdate(u, signers)
	if err != nil {
		return err
	}
	if f.out != "" {
		if err := os.WriteFile(f.out, raw, 0o644); err != nil {
			return err
		}
	}
	if err := submitToOrderer(ctx, lay, f.at, raw); err != nil {
		return fmt.Errorf("membership update %d: %w", info.Sequence, err)
	}
	stay := func(n localnet.Node) bool { return n.Org != f.org }
	if err := waitMembers(ctx, lay, admin, api.MembersID(raw), info.Sequence+1, stay, ""); err != nil {
		return fmt.Errorf("membership update %d: %w", info.Sequence, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s org %s: membership update %d (tx %s); in force on every peer after %s\n",
		did, f.org, info.Sequence, api.MembersID(raw), time.Since(start).Round(time.Millisecond))
	return nil
}

// askAs returns the admin of the first signer's org that has a peer, and
// that peer: the CLI asks the peers as that admin.
func askAs(lay *localnet.Layout, signers []*identity.Signer) (localnet.Client, localnet.Node, error) {
	for _, s := range signers {
		if p, err := lay.Peer(s.Org()); err == nil {
			a, err := lay.Admin(s.Org())
			return a, p, err
		}
	}
	return localnet.Client{}, localnet.Node{}, fmt.Errorf("no org of --sign-as has a peer to ask for the membership in force")
}

// readPEMCerts reads the DER of every CERTIFICATE block of files.
func readPEMCerts(flag string, files []string) ([][]byte, error) {
	var out [][]byte
	for _, file := range files {
		rest, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		n := len(out)
		for {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type == "CERTIFICATE" {
				out = append(out, b.Bytes)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s %s: no PEM CERTIFICATE block", flag, file)
		}
	}
	return slices.Clip(out), nil
}
