package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/localnet"
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
certificates with a membership update (strand channel revoke), so that from the next
block on every node refuses them. The rest of the network keeps running: nothing
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
			return runRevoke(cmd, revokeFlags{dir: dir, org: n.Org, certs: []string{r.OldCert, r.OldTLSCert}, timeout: timeout})
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
