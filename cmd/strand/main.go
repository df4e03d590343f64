// Command strand is the single binary of the strand ledger. This file and
// its siblings only parse flags and wire packages together.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/internal/gctune"
)

func main() {
	// Nodes apply their own gc settings; the other commands (demo, bench,
	// the clients) take strand's default.
	gctune.Apply(gctune.DefaultPercent, 0)
	if err := rootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "strand:", err)
		os.Exit(1)
	}
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "strand",
		Short:         "strand: a fast permissioned ledger in the execute-order-validate style",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(benchCmd())
	root.AddCommand(cryptoCmd(), nodeStartCmd("peer"), nodeStartCmd("orderer"), netCmd(), invokeCmd(), queryCmd(), eventsCmd())
	root.AddCommand(demoCmd(), snapshotCmd(), channelCmd(), ledgerCmd(), isolateCmd(), versionCmd())
	return root
}
