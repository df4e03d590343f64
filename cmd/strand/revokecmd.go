package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/contract/lifecycle"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
	"github.com/strand-ledger/strand/orderer"
)

type revokeFlags struct {
	dir, org, at string
	channel      string // "" is the network's channel
	certs        []string
	signAs       []string
	timeout      time.Duration
}

// channelRevokeCmd is `strand channel revoke`: a membership update that
// revokes certificates of one org.
func channelRevokeCmd() *cobra.Command {
	var f revokeFlags
	cmd := &cobra.Command{
		Use:   "revoke --org ORG --cert CERT.pem [--cert ...]",
		Short: "Revoke certificates of an org: a membership update carrying the org's new CRL, signed by a majority of org admins",
		Long: "Signs a new X.509 certificate revocation list of --org with the org's CA (DIR/crypto/ORG/ca-key.pem): the\n" +
			"serials its previous list (DIR/crypto/ORG/crl.der) revoked plus those of the --cert files, with the next CRL\n" +
			"number. Builds a membership update carrying it, with the sequence the peers report, signed by the admins\n" +
			"of the orgs --sign-as names (the policy wants a majority of the channel's orgs; default: every org of the\n" +
			"network); submits it to an orderer and waits until every peer has it in force. From the block after the\n" +
			"one that carries it, every node refuses the revoked certificates: proposals, submissions, endorsements,\n" +
			"validation and TLS handshakes (docs/membership.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRevoke(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", defaultNetDir, "the network's directory")
	fl.StringVar(&f.org, "org", "", "the org whose certificates to revoke (its CA signs the list)")
	fl.StringSliceVar(&f.certs, "cert", nil, "PEM certificate file to revoke (repeatable); each must be issued by the org's CA")
	fl.StringSliceVar(&f.signAs, "sign-as", nil, "orgs whose admins sign (default: every org with an admin in the network)")
	fl.StringVar(&f.at, "at", "", "the orderer to submit to (default: the channel's first current orderer)")
	fl.StringVar(&f.channel, "channel", "", "the channel whose membership to update (default: the network's channel); each channel keeps its own lists")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up after this long")
	return cmd
}

func runRevoke(cmd *cobra.Command, f revokeFlags) error {
	start := time.Now()
	if f.org == "" || len(f.certs) == 0 {
		return fmt.Errorf("want --org ORG and at least one --cert FILE")
	}
	lay, err := loadNet(f.dir)
	if err != nil {
		return err
	}
	ca, crlFile, err := loadOrgCA(lay, f.org)
	if err != nil {
		return err
	}
	var serials []*big.Int
	var names []string
	for _, file := range f.certs {
		c, err := readIssuedCert(file, ca, f.org)
		if err != nil {
			return err
		}
		serials = append(serials, c.SerialNumber)
		names = append(names, fmt.Sprintf("%q serial %s", c.Subject.String(), c.SerialNumber.Text(16)))
	}
	prev, err := os.ReadFile(crlFile)
	if errors.Is(err, os.ErrNotExist) {
		prev, err = nil, nil
	}
	if err != nil {
		return err
	}
	crl, err := ca.RevokeCRL(prev, serials, time.Now())
	if err != nil {
		return err
	}
	signers, err := adminSigners(lay, f.signAs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	admin, err := lay.Admin(f.org) // asks the peers, as their org's admin
	if err != nil {
		return err
	}
	// The org's own peer, or any (an orderer org has none): every member
	// of the channel may ask a peer for the lists in force.
	peer, err := lay.Peer(f.org)
	if err != nil {
		if peer, err = lay.Peer(lay.Orgs()[0]); err != nil {
			return err
		}
	}
	channel := f.channel
	if channel == "" {
		if channel, err = channelName(lay.Channel); err != nil {
			return err
		}
	}
	info, err := peerRevocations(ctx, lay, admin, peer.Name, channel)
	if err != nil {
		return err
	}
	raw, err := signMembersUpdate(&api.MembersUpdate{Channel: channel, Sequence: info.Sequence, CRLs: []api.MembersCRL{{Org: f.org, CRL: crl}}}, signers)
	if err != nil {
		return err
	}
	if err := os.WriteFile(crlFile, crl, 0o644); err != nil {
		return err
	}
	if err := submitToOrderer(ctx, lay, f.at, raw); err != nil {
		return fmt.Errorf("membership update %d: %w", info.Sequence, err)
	}
	if err := waitMembers(ctx, lay, admin, api.MembersID(raw), info.Sequence+1, func(localnet.Node) bool { return true }, channel); err != nil {
		return fmt.Errorf("membership update %d: %w", info.Sequence, err)
	}
	on := ""
	if f.channel != "" {
		on = " of channel " + channel
	}
	fmt.Fprintf(cmd.OutOrStdout(), "revoked %s of org %s: membership update %d%s (tx %s), CRL written to %s; in force on every peer after %s\n",
		strings.Join(names, ", "), f.org, info.Sequence, on, api.MembersID(raw), crlFile, time.Since(start).Round(time.Millisecond))
	return nil
}

// loadOrgCA loads org's CA from the network directory and returns the
// file of its revocation list.
func loadOrgCA(lay *localnet.Layout, org string) (*identity.CA, string, error) {
	d := filepath.Join(lay.Dir, "crypto", org)
	certPEM, err := os.ReadFile(filepath.Join(d, "ca.pem"))
	if err != nil {
		return nil, "", fmt.Errorf("--org %s: the org's CA certificate: %w", org, err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(d, "ca-key.pem"))
	if err != nil {
		return nil, "", fmt.Errorf("--org %s: the org's CA key signs its revocation list: %w", org, err)
	}
	ca, err := identity.LoadCA(org, certPEM, keyPEM)
	if err != nil {
		return nil, "", fmt.Errorf("--org %s: %w", org, err)
	}
	return ca, filepath.Join(d, "crl.der"), nil
}

// readIssuedCert reads a PEM certificate and checks that ca issued it.
func readIssuedCert(file string, ca *identity.CA, org string) (*x509.Certificate, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--cert: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("--cert %s: no PEM CERTIFICATE block", file)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("--cert %s: %w", file, err)
	}
	caCert, err := x509.ParseCertificate(ca.CertDER())
	if err != nil {
		return nil, err
	}
	if err := c.CheckSignatureFrom(caCert); err != nil {
		return nil, fmt.Errorf("--cert %s: certificate %q is not issued by the CA of org %s (%q): %w", file, c.Subject.String(), org, caCert.Subject.String(), err)
	}
	return c, nil
}

// signMembersUpdate encodes u and returns its envelope signed by signers.
func signMembersUpdate(mu *api.MembersUpdate, signers []*identity.Signer) ([]byte, error) {
	u, err := api.EncodeMembersUpdate(mu)
	if err != nil {
		return nil, err
	}
	env := &api.ConfigEnvelope{Update: u}
	for _, s := range signers {
		if err := env.AddSignature(s); err != nil {
			return nil, err
		}
	}
	return api.EncodeMembers(env)
}

// channelName reads the channel's name from its file.
func channelName(file string) (string, error) {
	ch, err := node.LoadChannel(file)
	if err != nil {
		return "", err
	}
	return ch.Channel, nil
}

// submitToOrderer submits raw to orderer at ("" the channel's first).
func submitToOrderer(ctx context.Context, lay *localnet.Layout, at string, raw []byte) error {
	ch, err := node.LoadChannel(lay.Channel)
	if err != nil {
		return err
	}
	n, err := ordererNode(lay, at)
	if err != nil {
		return err
	}
	conn, _, err := adminConn(lay, ch, n)
	if err != nil {
		return err
	}
	defer conn.Close()
	cl := api.NewOrdererClient(conn)
	return submitPatiently(ctx, n.Name, func() (*api.SubmitResponse, error) {
		return cl.Submit(ctx, &api.SubmitRequest{Transaction: raw})
	}, 100*time.Millisecond)
}

// submitPatiently calls submit until the orderer named name takes the
// update. An orderer answers 503 while its Raft group has no leader (just
// after net up, or during an election) and queues nothing, so submit is
// called again every wait until ctx ends; any other refusal is final. A
// copy the cluster did take meanwhile is harmless: a second names a spent
// sequence and is refused.
func submitPatiently(ctx context.Context, name string, submit func() (*api.SubmitResponse, error), wait time.Duration) error {
	for {
		r, err := submit()
		if err != nil {
			return fmt.Errorf("submitting to %s: %w", name, err)
		}
		switch r.GetStatus() {
		case orderer.StatusOK:
			return nil
		case orderer.StatusUnavailable:
		default:
			return fmt.Errorf("orderer %s refused it (%d): %s", name, r.GetStatus(), r.GetMessage())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("orderer %s refused it (%d) until the timeout: %s", name, r.GetStatus(), r.GetMessage())
		case <-time.After(wait):
		}
	}
}

// peerRevocations asks peer, as c, for the revocation lists it has in
// force.
func peerRevocations(ctx context.Context, lay *localnet.Layout, c localnet.Client, peer, channel string) (node.RevocationsInfo, error) {
	var info node.RevocationsInfo
	conn, err := lay.ConnectAs(c, peer)
	if err != nil {
		return info, err
	}
	defer conn.Close()
	if channel != "" { // else the network's channel, which conn addresses
		conn = conn.OnChannel(channel)
	}
	raw, err := conn.Contract(lifecycle.Namespace).Evaluate(ctx, "revocations")
	if err != nil {
		return info, fmt.Errorf("asking %s for the revocation lists in force: %w", peer, err)
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		return info, fmt.Errorf("%s's revocation lists: %w", peer, err)
	}
	return info, nil
}

// waitMembers waits until every peer that with(peer) committed txID
// VALID and has membership sequence seq in force.
func waitMembers(ctx context.Context, lay *localnet.Layout, c localnet.Client, txID string, seq uint64, with func(localnet.Node) bool, channel string) error {
	for _, n := range lay.Nodes {
		if n.Role != identity.RolePeer || !with(n) {
			continue
		}
		conn, err := lay.ConnectAs(c, n.Name)
		if err != nil {
			return err
		}
		on := conn
		if channel != "" {
			on = conn.OnChannel(channel)
		}
		_, err = on.Gateway.CommitStatus(ctx, txID)
		conn.Close()
		if channel != "" && status.Code(err) == codes.NotFound && strings.Contains(err.Error(), "unknown channel") {
			continue // a peer that does not serve the channel
		}
		var ce *client.CommitError
		if errors.As(err, &ce) {
			return fmt.Errorf("the channel refused it: %s (INVALID_CONFIG_TRANSACTION: a stale sequence or CRL number, run it again; "+
				"ENDORSEMENT_POLICY_FAILURE: sign as more orgs with --sign-as)", ce.Code)
		}
		if err != nil {
			return fmt.Errorf("waiting for %s to commit tx %s: %w", n.Name, txID, err)
		}
		for {
			info, err := peerRevocations(ctx, lay, c, n.Name, channel)
			if err == nil && info.Sequence >= seq {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s committed it but does not have membership sequence %d in force (last: %v): %w", n.Name, seq, err, ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return nil
}
