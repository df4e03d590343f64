package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/client"
	"github.com/strand-ledger/strand/internal/rpcerr"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// clientFlags choose the network, the org whose client identity acts,
// and the contract.
type clientFlags struct {
	dir, org, contract, channel string
	timeout                     time.Duration
	after                       uint64 // --after-block: read state holding this block
}

func (f *clientFlags) bind(cmd *cobra.Command, withContract bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", defaultNetDir, "the network's directory")
	fl.StringVar(&f.org, "org", "Org1", "act as this org's client0, through this org's first peer")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up after this long")
	fl.StringVar(&f.channel, "channel", "", "the channel to address, on a peer that serves several (default: the network's channel)")
	if withContract {
		fl.StringVar(&f.contract, "contract", "smallbank", "the contract to call")
		fl.Uint64Var(&f.after, "after-block", 0, "read state that holds this block (the block another invoke printed): every endorser waits for it, so a write made through one org's peer is read through another's")
	}
}

// contractOf is --contract on conn, reading state that holds --after-block.
func (f *clientFlags) contractOf(conn *localnet.Conn) *client.Contract {
	c := conn.Contract(f.contract)
	if f.after > 0 {
		c = c.After(&client.Commit{Block: f.after})
	}
	return c
}

// connect loads the network and connects as the org's client, checking
// the contract against the channel's.
func (f *clientFlags) connect() (*localnet.Conn, error) {
	lay, err := loadNet(f.dir)
	if err != nil {
		return nil, err
	}
	if _, err := lay.Peer(f.org); err != nil {
		return nil, fmt.Errorf("--org %q: the network in %s has no such org; want one of %s", f.org, f.dir, strings.Join(lay.Orgs(), ", "))
	}
	conn, err := lay.Connect(f.org, "")
	if err != nil || f.channel == "" || f.channel == conn.Channel {
		return conn, err
	}
	return conn.OnChannel(f.channel), nil
}

func invokeCmd() *cobra.Command {
	var f clientFlags
	var retries int
	cmd := &cobra.Command{
		Use:   "invoke [flags] FUNCTION [ARGS...]",
		Short: "Submit a transaction and wait until it commits on the org's peer",
		Long: `Endorses FUNCTION(ARGS...) of --contract, orders it and waits until it is
committed on the org's peer, then prints its tx id, block, validation code
and result. A transaction that commits with a code other than VALID exits
non-zero; read conflicts are run again up to --retries times. Put -- before
arguments that start with a dash.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conn, err := f.connect()
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			commit, err := f.contractOf(conn).SubmitWithRetry(ctx, retries, args[0], args[1:]...)
			if commit != nil {
				printCommit(cmd.OutOrStdout(), commit)
			}
			return f.explain(conn, f.contract+"."+args[0], err)
		},
	}
	f.bind(cmd, true)
	cmd.Flags().IntVar(&retries, "retries", 3, "run the transaction again this many times on a read conflict")
	return cmd
}

// explain turns what a client call returned into the command's error:
// the cause first and the tx id once; nil stays nil.
func (f *clientFlags) explain(conn *localnet.Conn, what string, err error) error {
	return explainClient(conn, f.dir, what, err)
}

func explainClient(conn *localnet.Conn, dir, what string, err error) error {
	var (
		ce *client.CommitError
		ee *client.EndorseError
		se *client.SubmitError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return fmt.Errorf("%s: %s", what, strings.TrimPrefix(ce.Error(), "client: "))
	case rpcerr.Unreachable(err):
		// The org's own peer did not answer: nothing was endorsed. Running
		// but refusing this client's certificate is told apart by a
		// probe, not by the gRPC error's text (which says "bad
		// certificate", "broken pipe" or "connection reset" by timing).
		if why := refusedTLS(conn); why != "" {
			return fmt.Errorf("%s: %s %s at %s is running but refused this client's TLS certificate (%s): the certificate is likely revoked, "+
				"of an org removed from the channel, or issued by a CA the channel does not trust; the node's log names which "+
				"(`strand query --dir %s --contract _lifecycle revocations` shows the revocations and removals in force)",
				what, conn.Peer.Role, conn.Peer.Name, conn.Peer.Address, why, dir)
		}
		return fmt.Errorf("%s: %s %s at %s: %s: is it running? `strand net status --dir %s` shows which nodes are; `strand net up --dir %s` starts stopped ones",
			what, conn.Peer.Role, conn.Peer.Name, conn.Peer.Address, rpcerr.Short(err), dir, dir)
	case errors.As(err, &ee) && ee.Status == http.StatusServiceUnavailable,
		errors.As(err, &se) && se.Status == http.StatusServiceUnavailable:
		return fmt.Errorf("%s (`strand net status --dir %s` shows which nodes run; `strand net up --dir %s` starts stopped ones)",
			strings.TrimPrefix(err.Error(), "client: "), dir, dir)
	case errors.As(err, &ee), errors.As(err, &se):
		return errors.New(strings.TrimPrefix(err.Error(), "client: "))
	}
	return fmt.Errorf("%s through %s: %w", what, conn.Peer.Name, err)
}

// refusedTLS probes conn's peer (node.ProbeTLS) and returns why the
// node refused the handshake, or "" if it did not.
func refusedTLS(conn *localnet.Conn) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := conn.Probe(ctx)
	if !errors.Is(err, node.ErrTLSRefused) {
		return ""
	}
	return strings.TrimPrefix(err.Error(), node.ErrTLSRefused.Error()+": "+conn.Peer.Address+": ")
}

func printCommit(out io.Writer, c *client.Commit) {
	result := string(c.Result)
	if result == "" {
		result = "(none)"
	}
	fmt.Fprintf(out, "tx      %s\nblock   %d\ncode    %s\nresult  %s\n", c.TxID, c.Block, c.Code, result)
}

func queryCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "query [flags] FUNCTION [ARGS...]",
		Short: "Evaluate a function on the org's peer and print its result (nothing is ordered)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conn, err := f.connect()
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			res, err := f.contractOf(conn).Evaluate(ctx, args[0], args[1:]...)
			if err != nil {
				return f.explain(conn, f.contract+"."+args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", res)
			return nil
		},
	}
	f.bind(cmd, true)
	return cmd
}

func eventsCmd() *cobra.Command {
	var f clientFlags
	var from uint64
	var follow bool
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print each committed block: number, transaction count and validation codes",
		Long: `Streams the commit events of the org's peer from block --from on. Without
--follow it stops once the committed blocks are printed (no new block for
half a second); with --follow it runs until interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			conn, err := f.connect()
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			idle := 500 * time.Millisecond
			if follow {
				idle = 0
			}
			return printEvents(ctx, cmd.OutOrStdout(), conn, f.dir, from, idle)
		},
	}
	f.bind(cmd, false)
	cmd.Flags().Uint64Var(&from, "from", 0, "first block")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing new blocks until interrupted")
	cmd.Flags().Lookup("timeout").Usage = "unused by events"
	return cmd
}

// printEvents prints blocks from start until ctx ends or, when idle > 0,
// no block has arrived for idle.
func printEvents(ctx context.Context, out io.Writer, conn *localnet.Conn, dir string, start uint64, idle time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, errc := conn.Gateway.BlockEvents(ctx, start)
	var timeout <-chan time.Time
	var timer *time.Timer
	if idle > 0 {
		timer = time.NewTimer(idle)
		defer timer.Stop()
		timeout = timer.C
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				if err := <-errc; !errors.Is(err, context.Canceled) {
					return explainClient(conn, dir, "block events", err)
				}
				return nil
			}
			fmt.Fprintf(out, "block %-6d txs %-4d %s\n", ev.Number, len(ev.Codes), codeCounts(ev.Codes))
			if timer != nil {
				timer.Reset(idle)
			}
		case <-timeout:
			return nil
		}
	}
}

// codeCounts is "VALID=98 MVCC_READ_CONFLICT=2", VALID first.
func codeCounts(codes []byte) string {
	n := map[api.TxValidationCode]int{}
	for _, c := range codes {
		n[api.TxValidationCode(c)]++
	}
	keys := make([]api.TxValidationCode, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, n[k])
	}
	return strings.Join(parts, " ")
}
