package main

import (
	"fmt"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// computeCmd is `strand compute start`: a compute node of a logical peer,
// until SIGINT or SIGTERM.
func computeCmd() *cobra.Command {
	var file string
	start := &cobra.Command{
		Use:   "start",
		Short: "Run the compute node a compute file describes until SIGINT or SIGTERM",
		Long: "Simulates and endorses proposals, signed as a peer of its org, over the state of its primary's memory node, and\n" +
			"joins its primary's endorsement pool (ComputePool.Join) for as long as it runs; the primary's gateway spreads\n" +
			"its org's endorsements over the pool, least loaded first. It has no ledger and commits nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := node.LoadCompute(file)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			c, err := node.StartCompute(cfg)
			if err != nil {
				return fmt.Errorf("starting compute node %s (%s): %w", cfg.Name, file, err)
			}
			<-ctx.Done()
			return c.Close()
		},
	}
	start.Flags().StringVar(&file, "config", "", "the compute file (nodes/compute<i>.<peer>.yaml of a generated network; fields: docs/config.md)")
	start.MarkFlagRequired("config")
	cmd := &cobra.Command{Use: "compute", Short: "Run a compute node (FlexChain's endorsing node of a logical peer)"}
	cmd.AddCommand(start)
	return cmd
}

// netScaleCmd is `strand net scale --compute SPEC`.
func netScaleCmd() *cobra.Command {
	var dir, spec string
	var wait, timeout time.Duration
	cmd := &cobra.Command{
		Use:   "scale --compute N|TARGET=N[,TARGET=N...]",
		Short: "Start or stop compute nodes of the running network's peers, live",
		Long: `Gives peers exactly N compute nodes each: --compute 3 every peer, --compute Org1=3
every peer of Org1, --compute peer0.Org1=3 that peer (later terms win). New compute
nodes get keys of the peer's org, free ports and a file nodes/compute<i>.<peer>.yaml,
and are started (with every other node that is not running, as net up does); they
join their peer's endorsement pool as soon as they run. Removed ones, highest
numbers first, get SIGTERM (SIGKILL after --timeout) and leave the pool as their
process ends; their files are deleted. The peers must have memory nodes (--memnodes).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lay, err := loadNet(dir)
			if err != nil {
				return err
			}
			targets, err := scaleTargets(lay, spec)
			if err != nil {
				return err
			}
			exe, err := nodeExe("the compute nodes")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NODE\tPRIMARY\tADDRESS\tPID\tSTATE")
			defer tw.Flush()
			for _, peer := range sortedKeys(targets) {
				procs, err := localnet.Scale(lay, peer, targets[peer], localnet.UpOptions{Command: []string{exe}, Wait: wait}, timeout)
				for _, p := range procs {
					state := "started"
					if !p.Started {
						state = "stopped and removed"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", p.Name, p.Primary, p.Address, p.PID, state)
				}
				if err != nil {
					return err
				}
			}
			tw.Flush()
			for _, peer := range sortedKeys(targets) {
				fmt.Fprintf(out, "%s: %d compute node(s)\n", peer, len(lay.ComputesOf(peer)))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultNetDir, "the network's directory")
	cmd.Flags().StringVar(&spec, "compute", "", "compute nodes per peer: N (every peer), or ORG=N / PEER=N terms separated by commas")
	cmd.Flags().DurationVar(&wait, "wait", 20*time.Second, "how long each new compute node may take to accept connections")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait after SIGTERM before SIGKILL")
	cmd.MarkFlagRequired("compute")
	return cmd
}

// scaleTargets parses --compute against the network's peers: the number
// of compute nodes each named peer is to have.
func scaleTargets(lay *localnet.Layout, spec string) (map[string]int, error) {
	var peers []localnet.Node
	for _, n := range lay.Nodes {
		if n.Role == identity.RolePeer {
			peers = append(peers, n)
		}
	}
	out := map[string]int{}
	for _, term := range strings.Split(spec, ",") {
		target, count, named := strings.Cut(strings.TrimSpace(term), "=")
		if !named {
			target, count = "", target
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 0 || n > localnet.MaxComputePerPeer {
			return nil, fmt.Errorf("--compute %q: %q is not a number of compute nodes from 0 to %d", spec, count, localnet.MaxComputePerPeer)
		}
		matched := false
		for _, p := range peers {
			if target == "" || target == p.Org || target == p.Name {
				out[p.Name], matched = n, true
			}
		}
		if !matched {
			var names []string
			for _, p := range peers {
				names = append(names, p.Name)
			}
			return nil, fmt.Errorf("--compute %q: %q is neither an org with peers (%s) nor a peer (%s) of the network in %s",
				spec, target, strings.Join(lay.Orgs(), ", "), strings.Join(names, ", "), lay.Dir)
		}
	}
	return out, nil
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
