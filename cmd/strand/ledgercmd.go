package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/node"
)

// ledgerCmd is `strand ledger`: offline tools for a stopped node's block
// store.
func ledgerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Offline tools for a stopped node's block store",
	}
	cmd.AddCommand(ledgerCheckCmd())
	return cmd
}

func ledgerCheckCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Verify a stopped node's block store (every frame, the hash chain, the index) without changing it; exit 1 on damage",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := node.LoadNode(file)
			if err != nil {
				return err
			}
			if pid, held := node.DataDirHolder(cfg.DataDir); held {
				return fmt.Errorf("%s is running (process %d holds %s): ledger check reads a stopped node's block store; stop it first",
					cfg.Name, pid, cfg.DataDir)
			}
			dir := filepath.Join(cfg.DataDir, "blocks")
			r, err := ledger.Check(dir)
			if err != nil {
				return fmt.Errorf("checking the block store of %s (%s): %w", cfg.Name, dir, err)
			}
			w := cmd.OutOrStdout()
			for _, p := range r.Problems {
				fmt.Fprintln(w, p)
			}
			fmt.Fprintf(w, "%s: blocks %d-%d in %d segments, %d replaced; index %s; %d problems\n",
				dir, r.Base, int64(r.Height)-1, r.Segments, r.Replaced, r.Index, len(r.Problems))
			if len(r.Problems) > 0 {
				return fmt.Errorf("the block store of %s is damaged: %d problems", cfg.Name, len(r.Problems))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "the node's node file (its dataDir holds the block store; the node must be stopped)")
	cmd.MarkFlagRequired("config")
	return cmd
}
