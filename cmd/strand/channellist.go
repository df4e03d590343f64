package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// channelListCmd is `strand channel list`: the channels the org's peer
// serves.
func channelListCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the channels the org's peer serves",
		Long: `Asks the org's first peer which channels it serves (docs/channels.md) and
prints one per line, sorted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
	return cmd
}
