package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// netRotateCmd is `strand net rotate`: a node's certificates replaced
// while the network runs.
func netRotateCmd() *cobra.Command {
	var dir, name string
	var keepOld bool
	var wait, timeout time.Duration
	cmd := &cobra.Command{
		Use:   "rotate --node NAME",
		Short: "Give a peer or orderer new certificates while the network runs, and revoke its old ones",
		Long: `Issues the node a new signing identity and a new TLS certificate from its org's CA
(same name, role and host names; new keys and serials), writes them over the files its
node file names (the old certificates are kept beside them as <file>.<serial>.old),
restarts that node alone (SIGTERM, then strand net up), and then revokes the old two
certificates with a membership update (strand channel revoke) on every channel the
node serves (each keeps its own lists), so that from the next block on every node
refuses them. The rest of the network keeps running: nothing
names a node by its certificate, only by its org, name and role, which stay.

--keep-old leaves the old certificates valid (revoke them later with strand channel
revoke --org ORG --cert FILE.old).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lay, err := loadNet(dir)
			if err != nil {
				return err
			}
			n, ok := lay.Node(name)
			if !ok {
				return fmt.Errorf("--node %q: no such node in the network in %s", name, dir)
			}
			r, err := localnet.Rotate(lay, name)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: signing certificate serial %s -> %s, TLS certificate serial %s -> %s\n", name, r.OldSerial, r.NewSerial, r.OldTLSSerial, r.NewTLSSerial)
			if err := localnet.StopNode(lay, name, 10*time.Second); err != nil {
				return err
			}
			exe, err := nodeExe("the node")
			if err != nil {
				return err
			}
			if _, err := localnet.Up(lay, localnet.UpOptions{Command: []string{exe}, Wait: wait}); err != nil {
				return fmt.Errorf("restarting %s with its new certificates: %w", name, err)
			}
			fmt.Fprintf(out, "%s: restarted with its new certificates\n", name)
			if keepOld {
				fmt.Fprintf(out, "old certificates kept valid: %s, %s\n", r.OldCert, r.OldTLSCert)
				return nil
			}
			// Each channel keeps its own revocation lists: revoke on
			// every channel the node serves, as it says itself.
			base, err := node.LoadChannel(lay.Channel)
			if err != nil {
				return err
			}
			var list *api.ChannelListResponse
			if _, err := adminCall(cmd.Context(), lay, base, n, timeout, func(ctx context.Context, c api.ChannelAdminClient) (*api.ChannelInfo, error) {
				var err error
				list, err = c.List(ctx, &api.ChannelListRequest{})
				return nil, err
			}); err != nil {
				return fmt.Errorf("asking %s for its channels: %w", name, err)
			}
			for _, ch := range list.GetChannels() {
				f := revokeFlags{dir: dir, org: n.Org, certs: []string{r.OldCert, r.OldTLSCert}, timeout: timeout}
				if len(list.GetChannels()) > 1 {
					f.channel = ch.GetChannel()
				}
				if err := runRevoke(cmd, f); err != nil {
					return fmt.Errorf("channel %s: %w", ch.GetChannel(), err)
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "dir", defaultNetDir, "the network's directory")
	fl.StringVar(&name, "node", "", "the peer or orderer")
	fl.BoolVar(&keepOld, "keep-old", false, "do not revoke the old certificates")
	fl.DurationVar(&wait, "wait", 20*time.Second, "how long the node may take to accept connections again")
	fl.DurationVar(&timeout, "timeout", 30*time.Second, "give up on the revocation after this long")
	_ = cmd.MarkFlagRequired("node")
	return cmd
}
