// Command strand is the single binary of the strand ledger. This file and
// its siblings only parse flags and wire packages together.
package main

import (
	"fmt"
	"os"
	"regexp"

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
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(benchCmd())
	root.AddCommand(cryptoCmd(), nodeStartCmd("peer"), nodeStartCmd("orderer"), memnodeCmd(), computeCmd(), netCmd(), invokeCmd(), queryCmd(), eventsCmd())
	root.AddCommand(demoCmd(), snapshotCmd(), channelCmd(), contractCmd(), ledgerCmd(), isolateCmd(), energyCmd(), versionCmd())
	return root
}

// dashNumber matches pflag's complaint about an argument such as -5 that
// it took for a flag.
var dashNumber = regexp.MustCompile(`^unknown shorthand flag: '.' in (-[0-9][0-9.]*)$`)

// flagError explains a flag error: a negative number is an argument that
// needs -- before it; any other says where the flags are listed.
func flagError(cmd *cobra.Command, err error) error {
	if m := dashNumber.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s was read as a flag: put -- before arguments that start with a dash (`%s [flags] -- ARGS...`, such as `strand invoke -- deposit_checking alice %s`)",
			m[1], cmd.CommandPath(), m[1])
	}
	return fmt.Errorf("%w (`%s --help` lists the flags)", err, cmd.CommandPath())
}
