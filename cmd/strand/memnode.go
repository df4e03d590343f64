package main

import (
	"fmt"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/node"
)

// memnodeCmd is `strand memnode start`: the memory node of a
// disaggregated peer (stateDB.backend: memnode), until SIGINT or SIGTERM.
func memnodeCmd() *cobra.Command {
	var file string
	start := &cobra.Command{
		Use:   "start",
		Short: "Run the memory node a memnode file describes until SIGINT or SIGTERM",
		Long: "Serves the memory tier (bounded by memoryMB, flushed to and evicted into a Pebble storage tier in dataDir) " +
			"to one peer over mutual TLS. A restart starts at the storage tier's savepoint; the peer re-applies the blocks above it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := node.LoadMemnode(file)
			if err != nil {
				return err
			}
			if cfg.Cores > 0 {
				runtime.GOMAXPROCS(cfg.Cores)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			m, err := node.StartMemnode(cfg)
			if err != nil {
				return fmt.Errorf("starting the memory node (%s): %w", file, err)
			}
			<-ctx.Done()
			return m.Close()
		},
	}
	start.Flags().StringVar(&file, "config", "", "the memnode file (fields: docs/config.md, memnode section)")
	start.MarkFlagRequired("config")
	cmd := &cobra.Command{Use: "memnode", Short: "Run a memory node (FlexChain's memory tier as a service)"}
	cmd.AddCommand(start)
	return cmd
}
