package main

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

const defaultNetDir = "./strand-net"

func netCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "net", Short: "Run a local network: every node a process of its own on 127.0.0.1"}
	cmd.AddCommand(netUpCmd(), netDownCmd(), netStatusCmd(), netVerifyCmd(), netAddOrdererCmd(), netAddOrgCmd(), netScaleCmd(), netRotateCmd())
	return cmd
}

// loadNet loads the network in dir, with an error that says how to make
// one.
func loadNet(dir string) (*localnet.Layout, error) {
	lay, err := localnet.Load(dir)
	if errors.Is(err, localnet.ErrNoNetwork) {
		return nil, fmt.Errorf("no network in %s: run `strand net up --dir %s` first", dir, dir)
	}
	return lay, err
}

func netUpCmd() *cobra.Command {
	var dir string
	var f specFlags
	var wait time.Duration
	var iso isolateFlags
	var isolate bool
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Generate a network into --dir (unless it has one) and start every node that is not running",
		Long: `Generates a network into --dir when the directory holds none (see
` + "`strand crypto gen`" + `), then starts every node that is not already
running as a process of the strand binary in a session of its own, so the
nodes outlive this command. Logs go to DIR/logs/<node>.log, PIDs to
DIR/pids/<node>.pid. Running it again starts only the nodes that are not
running. The generation flags apply only when the network is generated.

--isolation then stays in the foreground as ` + "`strand isolate`" + ` does (see its
help; its flags here are prefixed with isolation-) until SIGINT or SIGTERM,
which stop the controller only: the nodes keep running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := f.spec()
			if err != nil {
				return err
			}
			if isolate {
				if _, err := iso.config(); err != nil {
					return err
				}
			}
			if err := runNetUp(cmd, dir, spec, wait); err != nil || !isolate {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			iso.dir = dir
			return runIsolate(ctx, cmd, iso)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultNetDir, "the network's directory")
	cmd.Flags().DurationVar(&wait, "wait", 20*time.Second, "how long each node may take to accept connections")
	cmd.Flags().BoolVar(&isolate, "isolation", false, "then run the QiOi controller on the nodes in the foreground, as strand isolate does")
	f.bind(cmd)
	iso.bind(cmd, "isolation-")
	return cmd
}

func runNetUp(cmd *cobra.Command, dir string, spec localnet.Spec, wait time.Duration) error {
	out := cmd.OutOrStdout()
	lay, err := localnet.Load(dir)
	switch {
	case errors.Is(err, localnet.ErrNoNetwork):
		if lay, err = localnet.Generate(dir, spec); err != nil {
			return err
		}
		fmt.Fprintf(out, "generated a network of %d orgs, %d peer(s) each, %d orderer(s) in %s\n", spec.Orgs, spec.PeersPerOrg, spec.Orderers, lay.Dir)
		if len(lay.Memnodes) > 0 {
			fmt.Fprintf(out, "every peer keeps its state in a memory node of its own (%d memory nodes)\n", len(lay.Memnodes))
		}
		if spec.Compute > 0 {
			fmt.Fprintf(out, "every peer has %d compute node(s) that endorse for it (strand net scale --compute changes that live)\n", spec.Compute)
		}
		if note := quorumNote(spec.Orderers); note != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), note)
		}
	case err != nil:
		return err
	default:
		var set []string
		cmd.Flags().Visit(func(fl *pflag.Flag) {
			if fl.Name != "dir" && fl.Name != "wait" && !strings.HasPrefix(fl.Name, "isolation") {
				set = append(set, "--"+fl.Name)
			}
		})
		if len(set) > 0 {
			fmt.Fprintf(out, "reusing the network in %s; %s ignored (they apply when a network is generated)\n", lay.Dir, strings.Join(set, ", "))
		}
	}
	exe, err := nodeExe("the nodes")
	if err != nil {
		return err
	}
	procs, err := localnet.Up(lay, localnet.UpOptions{Command: []string{exe}, Wait: wait})
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tADDRESS\tMETRICS\tPID\tSTATE\tLOG")
	for _, p := range procs {
		state := "started"
		switch {
		case p.Removed && p.Alive:
			state = "removed from the channel (still running: `strand net down` stops it)"
		case p.Removed:
			state = "removed from the channel: not started"
		case !p.Started:
			state = "already running"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", p.Name, p.Kind(), p.Address, orNone(p.Metrics), p.PID, state, rel(lay.Dir, p.Log))
	}
	tw.Flush()
	org := lay.Orgs()[0]
	d := dirFlag(dir)
	fmt.Fprintf(out, `
next:
  strand invoke%[1]s --org %[2]s create_account alice Alice 1000 0
  strand query%[1]s --org %[2]s query alice
  strand events%[1]s --org %[2]s
  strand net status%[1]s
  strand net down%[1]s            (--purge also deletes the ledgers)
`, d, org)
	return nil
}

// dirFlag is " --dir D" unless D is the default.
func dirFlag(dir string) string {
	if dir == defaultNetDir {
		return ""
	}
	return " --dir " + dir
}

func netDownCmd() *cobra.Command {
	var dir string
	var opts localnet.DownOptions
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop every node of the network in --dir (SIGTERM, then SIGKILL)",
		Long: `Sends SIGTERM to every recorded node process that still runs this
network's node command (a PID reused by another process is left alone),
waits up to --timeout, then SIGKILLs what remains and removes the PID files.
--purge also deletes every node's data directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lay, err := loadNet(dir)
			if err != nil {
				return err
			}
			procs, err := localnet.Down(lay, opts)
			out := cmd.OutOrStdout()
			for _, p := range procs {
				switch {
				case p.PID == 0:
					fmt.Fprintf(out, "%-20s not running\n", p.Name)
				case p.Alive:
					fmt.Fprintf(out, "%-20s pid %d still running\n", p.Name, p.PID)
				default:
					fmt.Fprintf(out, "%-20s pid %d stopped\n", p.Name, p.PID)
				}
			}
			if err == nil && opts.Purge {
				fmt.Fprintf(out, "deleted the data directories under %s\n", lay.Dir)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultNetDir, "the network's directory")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 10*time.Second, "how long to wait after SIGTERM before SIGKILL")
	cmd.Flags().BoolVar(&opts.Purge, "purge", false, "also delete every node's data directory (ledger and state)")
	return cmd
}

// netAddOrdererCmd is `strand net add-orderer`: keys, node file and
// layout entry for a new orderer that a config update will add.
func netAddOrdererCmd() *cobra.Command {
	var dir, name string
	cmd := &cobra.Command{
		Use:   "add-orderer --name NAME",
		Short: "Generate a new orderer of OrdererOrg, to be added to the running Raft ordering service by a config update",
		Long: "Writes the keys and node file of a new orderer (free ports) and adds it to the network's layout. It is not in\n" +
			"the channel file: add it with `strand channel update --add-orderer NAME` (which signs and submits the update and\n" +
			"writes it to the node file's join file), then start it with `strand net up`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lay, err := loadNet(dir)
			if err != nil {
				return err
			}
			n, join, err := localnet.AddOrderer(lay, name)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "orderer %s of %s at %s (node file %s, join file %s)\nnext: strand channel update --dir %s --add-orderer %s; then strand net up --dir %s\n",
				n.Name, n.Org, n.Address, n.Config, join, dir, n.Name, dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultNetDir, "the network's directory")
	cmd.Flags().StringVar(&name, "name", "", "the new orderer's name")
	cmd.MarkFlagRequired("name")
	return cmd
}

// netAddOrgCmd is `strand net add-org`: a new org's keys, its peer and
// client, the membership update that adds it to the running channel, and
// its peer started and caught up.
func netAddOrgCmd() *cobra.Command {
	var f orgFlags
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "add-org --org ORG",
		Short: "Add a new org to the running network: its keys, a membership update that adds it, and its peer started and caught up",
		Long: "Generates the new org's CA, admin, client (client0) and peer (peer0.ORG, free ports) into the network's\n" +
			"directory as `strand crypto gen` does for a genesis org; submits the membership update that adds the org\n" +
			"(as `strand channel add-org`: signed by the admins of the orgs --sign-as names, default every other org\n" +
			"with an admin) and waits until every peer has it in force; writes it to DIR/join-ORG.members, the peer's\n" +
			"node file's join; records the org in the layout, starts the peer as `strand net up` does (PID file and\n" +
			"log, so net status and net down see it) and waits until it has caught up to the height of a peer of the\n" +
			"first genesis org. Then the client commands take --org ORG (docs/membership.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.org == "" {
				return fmt.Errorf("want --org ORG")
			}
			return runNetAddOrg(cmd, f, wait)
		},
	}
	orgUpdateFlags(cmd, &f, "the org to add (its ID in policies and identities)")
	cmd.Flags().DurationVar(&wait, "wait", 20*time.Second, "how long the new peer may take to accept connections")
	cmd.MarkFlagRequired("org")
	return cmd
}

func runNetAddOrg(cmd *cobra.Command, f orgFlags, wait time.Duration) error {
	start := time.Now()
	lay, err := loadNet(f.dir)
	if err != nil {
		return err
	}
	ref, err := lay.Peer(lay.Orgs()[0])
	if err != nil {
		return err
	}
	peer, join, caPEM, err := localnet.AddOrg(lay, f.org)
	if err != nil {
		return err
	}
	b, _ := pem.Decode(caPEM)
	if b == nil {
		return fmt.Errorf("the CA certificate generated for %s is not PEM", f.org)
	}
	o := api.MembersOrg{ID: f.org, CACerts: [][]byte{b.Bytes}, TLSCACerts: [][]byte{b.Bytes},
		Peers: []api.MembersPeer{{Name: peer.Name, Address: peer.Address}}}
	if _, err := identity.ParseOrgDef(o.ID, o.CACerts, o.TLSCACerts); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "generated org %s: CA, admin.%s, client0.%s and %s (at %s) under %s\n",
		f.org, f.org, f.org, peer.Name, peer.Address, filepath.Join(lay.Dir, "crypto", f.org))
	f.out = join
	if err := orgUpdate(cmd, lay, f, "added", &api.MembersUpdate{Add: []api.MembersOrg{o}}); err != nil {
		return fmt.Errorf("%w (the layout in %s was left without %s; run net add-org again)", err, lay.Dir, f.org)
	}
	if err := lay.Save(); err != nil {
		return err
	}
	exe, err := nodeExe(peer.Name)
	if err != nil {
		return err
	}
	procs, err := localnet.Up(lay, localnet.UpOptions{Command: []string{exe}, Wait: wait, Only: []string{peer.Name}})
	if err != nil {
		return fmt.Errorf("%s is in the channel and the layout, but did not start (`strand net up --dir %s` starts it): %w", peer.Name, f.dir, err)
	}
	pid := 0
	for _, p := range procs {
		if p.Name == peer.Name {
			pid = p.PID
		}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	h, err := awaitCaughtUp(ctx, peer, ref)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s started (pid %d, log %s) and caught up to %s at height %d; %s after %s\n",
		peer.Name, pid, rel(lay.Dir, lay.LogFile(peer.Name)), ref.Name, h, f.org, time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(w, "next: strand invoke%s --org %s ...\n", dirFlag(f.dir), f.org)
	return nil
}

// awaitCaughtUp waits until peer's committed height (its metrics'
// strand_committer_height) is ref's, and returns it.
func awaitCaughtUp(ctx context.Context, peer, ref localnet.Node) (uint64, error) {
	height := func(n localnet.Node) (uint64, error) {
		m, err := scrapeValues(ctx, n.Metrics)
		if err != nil {
			return 0, err
		}
		v, ok := m["strand_committer_height"]
		if !ok {
			return 0, fmt.Errorf("%s's metrics at %s have no strand_committer_height", n.Name, n.Metrics)
		}
		return strconv.ParseUint(v, 10, 64)
	}
	var last string
	for {
		hp, errp := height(peer)
		hr, errr := height(ref)
		switch {
		case errp == nil && errr == nil && hp == hr:
			return hp, nil
		case errp != nil:
			last = errp.Error()
		case errr != nil:
			last = errr.Error()
		default:
			last = fmt.Sprintf("%s at height %d, %s at %d", peer.Name, hp, ref.Name, hr)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%s did not catch up to %s (%s): %w", peer.Name, ref.Name, last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func netStatusCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every node's process, whether it accepts connections, and each peer's height",
		Long: `For every node: its recorded PID, whether that process runs, and whether
its address accepts TCP connections. For a reachable peer, also its height
(committed blocks), read from its gateway's block events as Org's client.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lay, err := loadNet(dir)
			if err != nil {
				return err
			}
			printStatus(cmd.Context(), cmd.OutOrStdout(), lay)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultNetDir, "the network's directory")
	return cmd
}

func printStatus(ctx context.Context, out io.Writer, lay *localnet.Layout) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tADDRESS\tPID\tPROCESS\tREACHABLE\tHEIGHT\tMETRICS")
	for _, p := range localnet.Status(lay) {
		pid, state, reach, height := "-", "stopped", "no", "-"
		if p.PID != 0 {
			pid = strconv.Itoa(p.PID)
		}
		if p.Alive {
			state = "running"
			if p.ByHand {
				state = "running (by hand)"
			}
		}
		if p.Removed {
			state = "removed"
			if p.Alive {
				state = "removed (running)"
			}
		}
		if p.Reachable {
			reach = "yes"
			switch {
			case p.Kind() == localnet.ComputeKind:
				height = computeHeight(ctx, p.Node)
			case p.Kind() == localnet.MemnodeKind:
			case p.Role == identity.RolePeer:
				height = peerHeight(ctx, lay, p.Node)
			case p.Role == identity.RoleOrderer:
				height = ordererHeight(ctx, lay, p.Node)
			}
		}
		metrics := p.Metrics
		if metrics == "" {
			metrics = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Kind(), p.Address, pid, state, reach, height, metrics)
	}
	tw.Flush()
}

func peerHeight(ctx context.Context, lay *localnet.Layout, n localnet.Node) string {
	conn, err := lay.ConnectReader(n)
	if err != nil {
		return "? (" + err.Error() + ")"
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h, err := conn.Height(ctx, 200*time.Millisecond)
	if err != nil {
		return "? (" + err.Error() + ")"
	}
	return strconv.FormatUint(h, 10)
}

// scrapeValues reads the unlabelled series of a node's /metrics page:
// name to value.
func scrapeValues(ctx context.Context, addr string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			out[f[0]] = f[1]
		}
	}
	return out, nil
}

// ordererHeight is an orderer's block store height, read from its
// metrics, and in a Raft cluster whether it leads now: on the network's
// first channel, whose series an orderer of several channels labels.
func ordererHeight(ctx context.Context, lay *localnet.Layout, n localnet.Node) string {
	if n.Metrics == "" {
		return "-"
	}
	m, err := scrapeValues(ctx, n.Metrics)
	if err != nil {
		return "? (" + err.Error() + ")"
	}
	if len(lay.Channels) > 0 {
		if ch, err := node.LoadChannel(lay.Channel); err == nil {
			for _, name := range []string{"strand_blockstore_height", "strand_orderer_raft_id", "strand_orderer_raft_leader"} {
				if v, ok := m[name+`{channel="`+ch.Channel+`"}`]; ok {
					m[name] = v
				}
			}
		}
	}
	h := m["strand_blockstore_height"]
	id, leader := m["strand_orderer_raft_id"], m["strand_orderer_raft_leader"]
	switch {
	case id == "": // a single orderer: no Raft
		return h
	case leader == "0" || leader == "":
		return h + " (Raft: no leader known)"
	case leader == id:
		return h + " (Raft leader)"
	}
	return h + " (Raft follower)"
}

// computeHeight is a compute node's height (its memory node's, as its
// reads last saw it), read from its metrics, and whether it is in its
// primary's pool.
func computeHeight(ctx context.Context, n localnet.Node) string {
	m, err := scrapeValues(ctx, n.Metrics)
	if err != nil {
		return "? (" + err.Error() + ")"
	}
	height, joined := m["strand_compute_height"], m["strand_compute_joined"]
	if joined != "1" {
		return height + " (not in " + n.Primary + "'s pool)"
	}
	return height + " (in " + n.Primary + "'s pool)"
}

func netVerifyCmd() *cobra.Command {
	var dir string
	var opts localnet.VerifyOptions
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check every node's chain through its API: every node answers, every block checks, and all nodes agree at one height",
		Long: `Reads every orderer's blocks from 0 and checks each as a peer would (the
link to the block before, data hash, orderer signature, genesis block);
checks that the orderers agree on every block they both have; and checks
that every block each peer committed holds the transactions of the
orderers' block of that number, with the same validation codes on every
peer. Prints each node's height and last block hash.

Exits non-zero, naming each node and why, when a block does not check or
two nodes disagree (at once), or when a node does not answer, cannot
serve its own chain, or is behind the longest chain: those are read
again for up to --settle (nodes catch up at their own pace) before
they fail.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lay, err := loadNet(dir)
			if err != nil {
				return err
			}
			chains, err := localnet.Verify(cmd.Context(), lay, opts)
			printChains(cmd.OutOrStdout(), chains)
			if err != nil {
				return fmt.Errorf("net verify failed:\n%w", err)
			}
			judged := slices.DeleteFunc(slices.Clone(chains), func(c localnet.Chain) bool { return c.Removed })
			fmt.Fprintf(cmd.OutOrStdout(), "all %d nodes answered, every block checks, and they agree at height %d", len(judged), judged[0].Height)
			if n := len(chains) - len(judged); n > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), " (%d orderer(s) removed from the channel not judged)", n)
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", defaultNetDir, "the network's directory")
	cmd.Flags().DurationVar(&opts.Settle, "settle", 10*time.Second, "how long nodes that are down, unreadable or behind may take to answer and catch up before verify fails")
	cmd.Flags().DurationVar(&opts.Idle, "idle", 200*time.Millisecond, "how long a peer's event stream may pause before its last block counts as read")
	return cmd
}

func printChains(out io.Writer, chains []localnet.Chain) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tHEIGHT\tSIGNED UP TO\tLAST BLOCK HASH\tREAD")
	for _, c := range chains {
		read := "ok"
		switch {
		case c.Removed:
			read = "removed"
		case errors.Is(c.Err, localnet.ErrUnavailable):
			read = "did not answer"
		case c.Err != nil:
			read = "cannot serve its chain"
		}
		signed := "-" // peers serve events, not signatures
		if c.Role == identity.RoleOrderer {
			signed = fmt.Sprint(c.Signed)
		}
		if c.Removed { // not read: its chain stopped at its removal
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t%s\n", c.Name, c.Role, read)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%x\t%s\n", c.Name, c.Role, c.Height, signed, c.Last, read)
	}
	tw.Flush()
}
