package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/ledger/statedb/backend"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// nodeStartCmd is `strand peer start` or `strand orderer start`: it runs
// the node a node file describes until SIGINT or SIGTERM, then closes it.
func nodeStartCmd(role string) *cobra.Command {
	var file string
	start := &cobra.Command{
		Use:   "start",
		Short: "Run the " + role + " a node file describes until SIGINT or SIGTERM",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runNode(ctx, role, file)
		},
	}
	start.Flags().StringVar(&file, "config", "", "the node file (nodes/<name>.yaml of a generated network; fields: docs/config.md)")
	start.MarkFlagRequired("config")
	cmd := &cobra.Command{Use: role, Short: "Run a " + role}
	cmd.AddCommand(start)
	if role == "orderer" {
		cmd.AddCommand(transferLeaderCmd())
	}
	return cmd
}

func runNode(ctx context.Context, role, file string) error {
	cfg, err := node.LoadNode(file)
	if err != nil {
		return err
	}
	if cfg.Role != role {
		return fmt.Errorf("%s: role is %q: `strand %s start` runs a %s; start it with `strand %s start --config %s`",
			file, cfg.Role, role, role, cfg.Role, file)
	}
	var closer interface{ Close() error }
	if role == "peer" {
		closer, err = node.StartPeer(cfg)
	} else {
		closer, err = node.StartOrderer(cfg)
	}
	if err != nil {
		return fmt.Errorf("starting %s %s (%s): %w", role, cfg.Name, file, err)
	}
	<-ctx.Done()
	cfg.Logger().Info("signal received; closing", "role", role)
	if err := closer.Close(); err != nil {
		return fmt.Errorf("closing %s %s (%s): %w", role, cfg.Name, file, err)
	}
	cfg.Logger().Info("closed cleanly", "role", role)
	return nil
}

type specFlags struct {
	orgs, peers, orderers, basePort int
	channels                        int
	profile, memnodes               bool
	batchTimeout                    time.Duration
	blockSize                       int
	compute                         int
	batchMode, stateDB              string
	checkpoint                      int
	alg                             string
}

func (f *specFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&f.orgs, "orgs", 2, "peer orgs, Org1..OrgN")
	fl.IntVar(&f.peers, "peers", 1, "peers per org")
	fl.IntVar(&f.orderers, "orderers", 3, "orderers of OrdererOrg; more than one form a Raft cluster (3 tolerates one failure, 5 two)")
	fl.IntVar(&f.channels, "channels", 1, "channels every peer process serves and the orderers order: demo, then demo2..demoN, each its own ledger and Raft group (docs/channels.md)")
	fl.IntVar(&f.basePort, "base-port", 0, "first port; nodes take consecutive ports, then their metrics endpoints (0: free ports)")
	fl.BoolVar(&f.profile, "profile", false, "serve Go's profiles (/debug/pprof/) on every node's metrics address")
	fl.BoolVar(&f.memnodes, "memnodes", false, "give every peer a memory node of its own (strand memnode start) that keeps its state (stateDB.backend: memnode); its ports come after all the others")
	fl.IntVar(&f.compute, "compute", 0, "give every peer this many compute nodes (strand compute start) that endorse over its memory node; needs --memnodes; strand net scale changes it live")
	bindBatchTimeout(fl, &f.batchTimeout)
	bindBlockSize(fl, &f.blockSize, "batch-max-txs")
	bindBatchMode(fl, &f.batchMode)
	bindStateDB(fl, &f.stateDB)
	fl.IntVar(&f.checkpoint, "checkpoint-blocks", 0, "orderers sign every Nth block only; peers trust their TLS streams in between (0: sign every block)")
	fl.StringVar(&f.alg, "alg", "ecdsa-p256", "signature algorithm of the CAs and of every node's, client's and admin's signing key: ecdsa-p256 or ed25519 (TLS keys stay P-256)")
}

func (f *specFlags) spec() (localnet.Spec, error) {
	for _, v := range []struct {
		flag string
		n    int
	}{{"--orgs", f.orgs}, {"--peers", f.peers}, {"--orderers", f.orderers}, {"--channels", f.channels}} {
		if v.n < 1 || v.n > 64 {
			return localnet.Spec{}, fmt.Errorf("%s %d: want 1 to 64", v.flag, v.n)
		}
	}
	if f.basePort < 0 || f.basePort > 65535 {
		return localnet.Spec{}, fmt.Errorf("--base-port %d: want 0 (free ports) or a port up to 65535", f.basePort)
	}
	if f.batchTimeout < time.Millisecond || f.batchTimeout > 10*time.Minute {
		return localnet.Spec{}, fmt.Errorf("--%s %v: want 1ms to 10m", flagBatchTimeout, f.batchTimeout)
	}
	if f.blockSize < 1 || f.blockSize > 100_000 {
		return localnet.Spec{}, fmt.Errorf("--%s %d: want 1 to 100000", flagBlockSize, f.blockSize)
	}
	if err := checkBatchMode(f.batchMode); err != nil {
		return localnet.Spec{}, err
	}
	if err := backend.Check(f.stateDB); err != nil {
		return localnet.Spec{}, fmt.Errorf("--%s %q: want one of %s", flagStateDB, f.stateDB, strings.Join(backend.Names(), ", "))
	}
	if f.stateDB == backend.Memnode {
		return localnet.Spec{}, fmt.Errorf("--%s %s: give --memnodes instead, which also starts a memory node for every peer", flagStateDB, f.stateDB)
	}
	if f.memnodes && f.stateDB != backend.Default {
		return localnet.Spec{}, fmt.Errorf("--%s %s and --memnodes: with --memnodes the peers keep their state on their memory nodes; give one or the other", flagStateDB, f.stateDB)
	}
	if f.compute < 0 || f.compute > localnet.MaxComputePerPeer {
		return localnet.Spec{}, fmt.Errorf("--compute %d: want 0 to %d compute nodes per peer", f.compute, localnet.MaxComputePerPeer)
	}
	if f.channels > 1 && f.memnodes {
		return localnet.Spec{}, fmt.Errorf("--channels %d and --memnodes: a memory node keeps one channel's state; a peer with several channels keeps each in its own state database", f.channels)
	}
	if f.compute > 0 && !f.memnodes {
		return localnet.Spec{}, fmt.Errorf("--compute %d needs --memnodes: compute nodes read their peer's state from its memory node", f.compute)
	}
	alg, err := identity.ParseAlgorithm(f.alg)
	if err != nil {
		return localnet.Spec{}, fmt.Errorf("--alg: %w", err)
	}
	s := localnet.Spec{Orgs: f.orgs, PeersPerOrg: f.peers, Orderers: f.orderers, BasePort: f.basePort, Profile: f.profile, Memnodes: f.memnodes, StateDB: f.stateDB, Compute: f.compute, Channels: f.channels, Alg: alg}
	s.Batch.Timeout, s.Batch.MaxTxs, s.Batch.Mode = f.batchTimeout, f.blockSize, f.batchMode
	if f.checkpoint < 0 || f.checkpoint > 1_000_000 {
		return localnet.Spec{}, fmt.Errorf("--checkpoint-blocks %d: want 0 (sign every block) to 1000000", f.checkpoint)
	}
	if f.checkpoint > 0 {
		s.Batch.Checkpoint = &node.SignCheckpointConfig{Blocks: f.checkpoint}
	}
	return s, nil
}

// quorumNote warns about an even number of Raft orderers: a leader needs
// a majority, so n even tolerates no more failures than n-1; "" if none.
func quorumNote(orderers int) string {
	if orderers < 2 || orderers%2 != 0 {
		return ""
	}
	return fmt.Sprintf("note: --orderers %d: a Raft leader needs %d of the %d, so %d failing stop ordering, no more tolerant than %d; use an odd number (3 tolerate one failure, 5 two)",
		orderers, orderers/2+1, orderers, orderers/2, orderers-1)
}

func cryptoCmd() *cobra.Command {
	var dir string
	var f specFlags
	var hosts []string
	var dataRoot string
	gen := &cobra.Command{
		Use:   "gen",
		Short: "Generate the keys, certificates, channel file and node files of a local network",
		Long: `Writes one CA per org, a signing identity and a TLS certificate per node
and per client, channel.yaml, nodes/<name>.yaml and layout.json into --dir,
which must not exist or be empty. Start it with ` + "`strand net up --dir DIR`" + `,
or each node with ` + "`strand peer|orderer start --config DIR/nodes/<name>.yaml`" + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := f.spec()
			if err != nil {
				return err
			}
			if spec.Hosts, err = parseHosts(hosts); err != nil {
				return err
			}
			if len(spec.Hosts) > 0 && spec.BasePort == 0 {
				return fmt.Errorf("--host places nodes on other machines, whose free ports this one cannot know: give --base-port too (such as --base-port 7050)")
			}
			if dataRoot != "" && !filepath.IsAbs(dataRoot) {
				return fmt.Errorf("--data-root %q: want an absolute directory, such as /var/lib/strand", dataRoot)
			}
			spec.DataRoot = dataRoot
			lay, err := localnet.Generate(dir, spec)
			if err != nil {
				return err
			}
			if note := quorumNote(spec.Orderers); note != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), note)
			}
			printLayout(cmd.OutOrStdout(), lay)
			return nil
		},
	}
	gen.Flags().StringVar(&dir, "dir", "", "directory to generate into (new or empty)")
	gen.MarkFlagRequired("dir")
	gen.Flags().StringArrayVar(&hosts, "host", nil, "NODE=HOST: node NODE (orderer0, peer0.Org1, memnode.peer0.Org1) listens on and is dialled at HOST, a DNS name or IP address also put in its TLS certificate; repeat per node; needs --base-port (docs/deploy.md)")
	gen.Flags().StringVar(&dataRoot, "data-root", "", "absolute directory under which each node keeps its data (DIR/<node>), such as /var/lib/strand on servers (empty: --dir's data/<node>)")
	f.bind(gen)
	cmd := &cobra.Command{Use: "crypto", Short: "Generate crypto material and configuration"}
	cmd.AddCommand(gen, bundleCmd())
	return cmd
}

// bundleCmd is `strand crypto bundle`: one node's files for its machine.
func bundleCmd() *cobra.Command {
	var dir, name, out string
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Write the files one node needs on its own machine (node file, channel file, its keys, CA certificates) as a .tar.gz",
		Long: `Writes a gzipped tar of what node --node of the network in --dir needs to
run on its own machine: its node file, the channel file, its own key pairs
and the CA certificates it trusts, at their paths under --dir. Extract it
into /etc/strand and start the node with
` + "`strand peer|orderer|memnode start --config /etc/strand/nodes/<node>.yaml`" + `
(or the systemd units in deploy/systemd). It never holds a CA's key or
another node's: docs/deploy.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return fmt.Errorf("--out %s: %w (a bundle holds private keys: it is never overwritten, remove the old one first)", out, err)
			}
			defer func() {
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					os.Remove(out)
				}
			}()
			if err := localnet.Bundle(dir, name, f); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: the files of %s (extract into /etc/strand: tar -xzf %s -C /etc/strand)\n", out, name, filepath.Base(out))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the network directory (from `strand crypto gen`)")
	cmd.Flags().StringVar(&name, "node", "", "the node, such as peer0.Org1, orderer0 or memnode.peer0.Org1")
	cmd.Flags().StringVar(&out, "out", "", "the .tar.gz to write (must not exist; written 0600)")
	for _, f := range []string{"dir", "node", "out"} {
		cmd.MarkFlagRequired(f)
	}
	return cmd
}

// parseHosts reads --host NODE=HOST values; localnet checks the nodes and
// hosts themselves.
func parseHosts(vals []string) (map[string]string, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, v := range vals {
		name, host, ok := strings.Cut(v, "=")
		if !ok || name == "" || host == "" {
			return nil, fmt.Errorf("--host %q: want NODE=HOST, such as peer0.Org1=peer1.example.com", v)
		}
		if prev, dup := out[name]; dup {
			return nil, fmt.Errorf("--host %q: node %s is already placed on %s", v, name, prev)
		}
		out[name] = host
	}
	return out, nil
}

func printLayout(out io.Writer, lay *localnet.Layout) {
	fmt.Fprintf(out, "network in %s (channel file %s)\n", lay.Dir, rel(lay.Dir, lay.Channel))
	for _, c := range lay.Channels {
		fmt.Fprintf(out, "every peer and orderer also serves the channel of %s\n", rel(lay.Dir, c))
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tORG\tADDRESS\tMETRICS\tCONFIG")
	for _, n := range lay.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.Role, n.Org, n.Address, orNone(n.Metrics), rel(lay.Dir, n.Config))
	}
	tw.Flush()
	fmt.Fprintln(out, "\nclient identities (signing cert.pem/key.pem, TLS tls-cert.pem/tls-key.pem):")
	for _, c := range lay.Clients {
		fmt.Fprintf(out, "  %-16s %s\n", c.Name, rel(lay.Dir, filepath.Dir(c.Cert)))
	}
}

func rel(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return r
	}
	return path
}

// orNone is s, or "-" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
