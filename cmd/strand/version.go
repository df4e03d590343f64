package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/internal/buildinfo"
)

// versionCmd is `strand version`: which build this binary is.
func versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print this binary's version, commit, Go version and build time",
		Long: `Prints the build: the module version ("devel" when built from a checkout),
the git commit (+dirty when the checkout had changes) and its time, the Go
toolchain, and the build time when the builder recorded one. Every node
logs the same on its first line and exports it as strand_build_info.
A binary from ` + "`go run`" + ` or a test has no commit ("unknown").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := buildinfo.Read()
			if asJSON {
				raw, err := json.MarshalIndent(in, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", raw)
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), in)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print it as JSON")
	return cmd
}
