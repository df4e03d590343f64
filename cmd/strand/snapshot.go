package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/ledger/snapshot"
	"github.com/strand-ledger/strand/node"
)

// snapshotCmd is `strand snapshot`: export a stopped peer's ledger to a
// snapshot file, join a new peer from one, or check one (docs/snapshot.md).
func snapshotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Export a peer's ledger to a snapshot file, or join a new peer from one (docs/snapshot.md)",
	}
	cmd.AddCommand(snapshotExportCmd(), snapshotJoinCmd(), snapshotInfoCmd())
	return cmd
}

func snapshotExportCmd() *cobra.Command {
	var file, out string
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write a snapshot of a stopped peer's ledger (its data directory) to a file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := node.LoadNode(file)
			if err != nil {
				return err
			}
			start := time.Now()
			info, err := node.ExportSnapshot(cfg, out)
			if err != nil {
				return fmt.Errorf("exporting the ledger of %s (%s): %w", cfg.Name, file, err)
			}
			printInfo(cmd.OutOrStdout(), "exported", out, info, time.Since(start))
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "the peer's node file (its dataDir holds the ledger; the peer must be stopped)")
	cmd.Flags().StringVar(&out, "out", "", "the snapshot file to write")
	cmd.MarkFlagRequired("config")
	cmd.MarkFlagRequired("out")
	return cmd
}

func snapshotJoinCmd() *cobra.Command {
	var file, in string
	cmd := &cobra.Command{
		Use:   "join",
		Short: "Fill a new peer's empty data directory from a snapshot; then start it with `strand peer start`",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := node.LoadNode(file)
			if err != nil {
				return err
			}
			start := time.Now()
			info, err := node.JoinSnapshot(cfg, in)
			if err != nil {
				return fmt.Errorf("joining %s (%s) from %s: %w", cfg.Name, file, in, err)
			}
			printInfo(cmd.OutOrStdout(), "joined", in, info, time.Since(start))
			fmt.Fprintf(cmd.OutOrStdout(), "start the peer with `strand peer start --config %s`: it follows the orderer from block %d\n", file, info.Height)
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "the new peer's node file (its dataDir must not hold a ledger)")
	cmd.Flags().StringVar(&in, "file", "", "the snapshot file")
	cmd.MarkFlagRequired("config")
	cmd.MarkFlagRequired("file")
	return cmd
}

func snapshotInfoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "info FILE",
		Short: "Check a snapshot file whole (version, checksum, every record) and describe it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			info, err := snapshot.Verify(args[0])
			if err != nil {
				return err
			}
			printInfo(cmd.OutOrStdout(), "verified", args[0], info, time.Since(start))
			return nil
		},
	}
}

func printInfo(w io.Writer, verb, path string, in snapshot.Info, took time.Duration) {
	fmt.Fprintf(w, "%s %s in %s\n", verb, path, took.Round(time.Millisecond))
	fmt.Fprintf(w, "channel   %s\n", in.Channel)
	fmt.Fprintf(w, "height    %d (blocks 0-%d; a joined peer continues at block %d)\n", in.Height, in.Height-1, in.Height)
	fmt.Fprintf(w, "last hash %x (block %d)\n", in.PrevHash, in.Height-1)
	fmt.Fprintf(w, "state     %d keys\n", in.States)
	fmt.Fprintf(w, "tx ids    %d\n", in.TxIDs)
	fmt.Fprintf(w, "size      %d bytes\n", in.Size)
	fmt.Fprintf(w, "sha256    %x\n", in.SHA256)
}
