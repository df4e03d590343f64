package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/node"
)

// channelListCmd is `strand channel list`: the channels the org's peer
// serves, or, with --node, what a peer or orderer says of its channels.
func channelListCmd() *cobra.Command {
	var f clientFlags
	var nodeName string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the channels the org's peer serves, or a node's channels with --node",
		Long: `Asks the org's first peer which channels it serves (docs/channels.md) and
prints one per line, sorted.

--node NAME asks that peer or orderer of the network over its ChannelAdmin service,
as the admin of its org, and prints a table: each channel, the node's height of it,
whether it was joined while the node ran (strand channel join) or is in its node
file, and the hash of its genesis document.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodeName != "" {
				return listNodeChannels(cmd, f, nodeName)
			}
			conn, err := f.connect()
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			chs, err := conn.Gateway.Channels(ctx)
			if err != nil {
				return err
			}
			for _, ch := range chs {
				fmt.Fprintln(cmd.OutOrStdout(), ch)
			}
			return nil
		},
	}
	f.bind(cmd, false)
	cmd.Flags().StringVar(&nodeName, "node", "", "a peer or orderer of the network to ask, as its org's admin")
	return cmd
}

func listNodeChannels(cmd *cobra.Command, f clientFlags, name string) error {
	lay, err := loadNet(f.dir)
	if err != nil {
		return err
	}
	n, ok := lay.Node(name)
	if !ok {
		return fmt.Errorf("--node %q: no such node in the network in %s", name, f.dir)
	}
	base, err := node.LoadChannel(lay.Channel)
	if err != nil {
		return err
	}
	var list *api.ChannelListResponse
	_, err = adminCall(cmd.Context(), lay, base, n, f.timeout, func(ctx context.Context, c api.ChannelAdminClient) (*api.ChannelInfo, error) {
		var err error
		list, err = c.List(ctx, &api.ChannelListRequest{})
		return nil, err
	})
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CHANNEL\tHEIGHT\tSOURCE\tGENESIS HASH")
	for _, ch := range list.GetChannels() {
		src := "node file"
		if ch.GetJoined() {
			src = "joined"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\n", ch.GetChannel(), ch.GetHeight(), src, ch.GetHash())
	}
	return w.Flush()
}
