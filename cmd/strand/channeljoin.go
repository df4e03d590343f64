package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// genesisFile is where strand channel create writes channel id's genesis
// document in a network's directory, and where join reads it.
func genesisFile(dir, id string) string {
	return filepath.Join(dir, "channel-"+id+".genesis.json")
}

// channelCreateCmd is `strand channel create`: a new channel's genesis
// document, which nodes join while they run.
func channelCreateCmd() *cobra.Command {
	var dir, id, from, out string
	cmd := &cobra.Command{
		Use:   "create (--channel ID | --from CHANNEL_FILE)",
		Short: "Write a new channel's genesis document, for its nodes to join while they run",
		Long: `Writes the genesis document of a new channel: the canonical JSON of its orgs (with
their CA certificates), peers, orderers, batch limits and contracts, which every
node of the channel joins (strand channel join) and which the orderers make block 0.

--channel ID, for the local network in --dir: writes DIR/channel-ID.yaml with the
network channel's orgs, nodes, contracts and batch limits, and its genesis
document DIR/channel-ID.genesis.json. --from FILE: the genesis document of any
channel file, written to --out (default: beside it, NAME.genesis.json).

Nothing starts or changes on a node: joining does (docs/channels.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (id == "") == (from == "") {
				return fmt.Errorf("want exactly one of --channel (a channel like the network's) and --from (a channel file)")
			}
			if id != "" {
				lay, err := loadNet(dir)
				if err != nil {
					return err
				}
				if from, err = localnet.CreateChannel(lay, id); err != nil {
					return err
				}
				if out == "" {
					out = genesisFile(dir, id)
				}
			}
			ch, err := node.LoadChannel(from)
			if err != nil {
				return err
			}
			if _, err := node.ChannelFromGenesis(ch.Genesis(), from); err != nil {
				return err // a wasm or external contract in the file: nodes could not join it
			}
			if out == "" {
				out = strings.TrimSuffix(from, filepath.Ext(from)) + ".genesis.json"
			}
			if err := os.WriteFile(out, ch.Genesis(), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "channel %s: genesis document %s (hash %s)\n", ch.Channel, out, ch.Hash())
			if id != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "channel file %s\nnext: strand channel join --dir %s --channel %s\n", from, dir, id)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "dir", defaultNetDir, "the network's directory (with --channel)")
	fl.StringVar(&id, "channel", "", "the new channel's id, for a channel like the local network's")
	fl.StringVar(&from, "from", "", "a channel file (docs/config.md) to write the genesis document of")
	fl.StringVar(&out, "out", "", "where to write the genesis document")
	return cmd
}

type participationFlags struct {
	dir, id, genesis string
	nodes            []string
	timeout          time.Duration
}

func (f *participationFlags) bind(cmd *cobra.Command, join bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", defaultNetDir, "the network's directory")
	fl.StringVar(&f.id, "channel", "", "the channel")
	if join {
		fl.StringVar(&f.genesis, "genesis", "", "the channel's genesis document (default: DIR/channel-ID.genesis.json, from strand channel create)")
	}
	fl.StringSliceVar(&f.nodes, "node", nil, "nodes of the network to act on (default: every orderer and peer of the channel that is a node of the network)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up on a node after this long")
	_ = cmd.MarkFlagRequired("channel")
}

// channelJoinCmd is `strand channel join`: nodes start serving a channel
// while they run (ChannelAdmin.Join).
func channelJoinCmd() *cobra.Command {
	var f participationFlags
	cmd := &cobra.Command{
		Use:   "join --channel ID",
		Short: "Have the network's nodes join a channel while they run",
		Long: `Sends the channel's genesis document to each node over its ChannelAdmin service,
as the admin of the node's org: the orderers first (they write block 0 and, with
several, start the channel's Raft group), then the peers (each pulls the channel's
blocks from its orderers). A node keeps the document in its data directory and
serves the channel after a restart, until strand channel leave.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.genesis == "" {
				f.genesis = genesisFile(f.dir, f.id)
			}
			doc, err := os.ReadFile(f.genesis)
			if err != nil {
				return fmt.Errorf("the genesis document of channel %s: %w (write it with strand channel create)", f.id, err)
			}
			ch, err := node.ChannelFromGenesis(doc, f.genesis)
			if err != nil {
				return err
			}
			if ch.Channel != f.id {
				return fmt.Errorf("%s is the genesis document of channel %q, not %q", f.genesis, ch.Channel, f.id)
			}
			return participate(cmd, f, ch, func(ctx context.Context, c api.ChannelAdminClient) (*api.ChannelInfo, error) {
				return c.Join(ctx, &api.ChannelJoinRequest{Genesis: doc})
			}, "joined")
		},
	}
	f.bind(cmd, true)
	return cmd
}

// channelLeaveCmd is `strand channel leave`: nodes stop serving a channel
// they joined and delete its ledger (ChannelAdmin.Leave).
func channelLeaveCmd() *cobra.Command {
	var f participationFlags
	cmd := &cobra.Command{
		Use:   "leave --channel ID",
		Short: "Have the network's nodes leave a channel they joined, deleting its ledger",
		Long: `Asks each node over its ChannelAdmin service, as the admin of the node's org, to stop
serving the channel and delete its ledger: the peers first, then the orderers. Only
a channel a node joined while it ran (strand channel join) can be left so; one its
node file lists is refused (take it out of the node file and restart the node).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ch *node.ChannelConfig
			if doc, err := os.ReadFile(genesisFile(f.dir, f.id)); err == nil {
				ch, _ = node.ChannelFromGenesis(doc, genesisFile(f.dir, f.id))
			}
			if ch == nil && len(f.nodes) == 0 {
				return fmt.Errorf("no genesis document of channel %s in %s to find its nodes in: name them with --node", f.id, f.dir)
			}
			return participate(cmd, f, ch, func(ctx context.Context, c api.ChannelAdminClient) (*api.ChannelInfo, error) {
				return c.Leave(ctx, &api.ChannelLeaveRequest{Channel: f.id})
			}, "left")
		},
	}
	f.bind(cmd, false)
	return cmd
}

// participate calls do on each node f names, or on the channel's nodes
// in the network (orderers first when joining, peers first when
// leaving), and prints a table of what each answered. It fails if any
// node refused.
func participate(cmd *cobra.Command, f participationFlags, ch *node.ChannelConfig, do func(context.Context, api.ChannelAdminClient) (*api.ChannelInfo, error), verb string) error {
	lay, err := loadNet(f.dir)
	if err != nil {
		return err
	}
	base, err := node.LoadChannel(lay.Channel)
	if err != nil {
		return err
	}
	names := f.nodes
	if len(names) == 0 {
		var orderers, peers []string
		for _, ep := range ch.Orderers() {
			orderers = append(orderers, ep.Name)
		}
		for _, o := range ch.Orgs {
			for _, ep := range o.Peers {
				peers = append(peers, ep.Name)
			}
		}
		names = append(orderers, peers...)
		if verb == "left" {
			names = append(peers, orderers...)
		}
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tCHANNEL\tHEIGHT\tRESULT")
	var failed []string
	for _, name := range names {
		n, ok := lay.Node(name)
		if !ok {
			return fmt.Errorf("--node %q: no such node in the network in %s", name, f.dir)
		}
		info, err := adminCall(cmd.Context(), lay, base, n, f.timeout, do)
		if err != nil {
			fmt.Fprintf(w, "%s\t%s\t-\t%v\n", name, f.id, err)
			failed = append(failed, name)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", name, info.GetChannel(), info.GetHeight(), verb)
	}
	w.Flush()
	if len(failed) > 0 {
		return fmt.Errorf("channel %s: %d of %d nodes refused (%s)", f.id, len(failed), len(names), strings.Join(failed, ", "))
	}
	return nil
}

// adminCall dials node n as its org's admin and calls do on its
// ChannelAdmin service.
func adminCall(ctx context.Context, lay *localnet.Layout, ch *node.ChannelConfig, n localnet.Node, timeout time.Duration,
	do func(context.Context, api.ChannelAdminClient) (*api.ChannelInfo, error)) (*api.ChannelInfo, error) {
	admin, err := lay.Admin(n.Org)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := node.ClientTLS(ch, admin.TLSCert, admin.TLSKey)
	if err != nil {
		return nil, err
	}
	role := identity.RolePeer
	if n.Role == identity.RoleOrderer {
		role = identity.RoleOrderer
	}
	conn, err := grpc.NewClient(n.Address, grpc.WithTransportCredentials(credentials.NewTLS(node.ExpectServer(tlsCfg, role))))
	if err != nil {
		return nil, fmt.Errorf("dial %s at %s: %w", n.Name, n.Address, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return do(ctx, api.NewChannelAdminClient(conn))
}
