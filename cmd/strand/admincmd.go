package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
	"github.com/strand-ledger/strand/orderer"
)

// transferLeaderCmd is `strand orderer transfer-leader`: as OrdererOrg's
// admin, ask an orderer of a local network to hand Raft leadership to
// another orderer, and report how long it took.
func transferLeaderCmd() *cobra.Command {
	var dir, to, at string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "transfer-leader --to ORDERER",
		Short: "Move Raft leadership to another orderer (as the orderer org's admin)",
		Long: "Move the Raft leadership of the network's orderers to the orderer --to names (its name, e.g. orderer1, or its\n" +
			"Raft id: its position in the channel's orderer list plus one). The call goes to the orderer --at names (any\n" +
			"orderer will do: a follower passes it to the leader), authenticated by the orderer org's admin TLS certificate.\n" +
			"Transactions submitted meanwhile are held by the leader and ordered after the transfer.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lay, err := loadNet(dir)
			if err != nil {
				return err
			}
			ch, err := node.LoadChannel(lay.Channel)
			if err != nil {
				return err
			}
			id, name, err := raftID(ch, to)
			if err != nil {
				return err
			}
			target, err := ordererNode(lay, at)
			if err != nil {
				return err
			}
			conn, admin, err := adminConn(lay, ch, target)
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			ctx = orderer.OnChannel(ctx, ch.Channel) // the orderers may order several channels
			start := time.Now()
			leader, err := orderer.TransferLeaderClient(ctx, conn, id)
			if err != nil {
				return fmt.Errorf("transfer leader to %s (Raft id %d) via %s at %s as %s: %w", name, id, target.Name, target.Address, admin, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "leader is now %s (Raft id %d); took %s\n", name, leader, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "dir", defaultNetDir, "the network's directory")
	fl.StringVar(&to, "to", "", "the orderer to lead: its name (orderer1) or Raft id (2)")
	fl.StringVar(&at, "at", "", "the orderer to ask (default: the channel's first current orderer)")
	fl.DurationVar(&timeout, "timeout", 10*time.Second, "give up after this long")
	cmd.MarkFlagRequired("to")
	return cmd
}

// raftID resolves an orderer's name or Raft id (position in the
// channel's orderer list plus one, as node/ assigns them).
func raftID(ch *node.ChannelConfig, s string) (uint64, string, error) {
	eps := ch.Orderers()
	names := make([]string, len(eps))
	for i, ep := range eps {
		names[i] = fmt.Sprintf("%s (%d)", ep.Name, i+1)
		if ep.Name == s || strconv.Itoa(i+1) == s {
			return uint64(i + 1), ep.Name, nil
		}
	}
	return 0, "", fmt.Errorf("--to %q: no such orderer in channel %q; want one of %s", s, ch.Channel, strings.Join(names, ", "))
}

// ordererNode returns the orderer node called name, the channel's first
// current orderer if name is empty; an orderer the channel removed is an
// error naming a current one (localnet.Layout.Orderer).
func ordererNode(lay *localnet.Layout, name string) (localnet.Node, error) {
	return lay.Orderer(name)
}

// adminConn dials orderer n with the TLS certificate of its org's admin.
func adminConn(lay *localnet.Layout, ch *node.ChannelConfig, n localnet.Node) (*grpc.ClientConn, string, error) {
	admin, err := lay.Admin(n.Org)
	if err != nil {
		return nil, "", err
	}
	tlsCfg, err := node.ClientTLS(ch, admin.TLSCert, admin.TLSKey)
	if err != nil {
		return nil, "", err
	}
	conn, err := grpc.NewClient(n.Address, grpc.WithTransportCredentials(credentials.NewTLS(node.ExpectServer(tlsCfg, identity.RoleOrderer))))
	if err != nil {
		return nil, "", fmt.Errorf("dial %s at %s: %w", n.Name, n.Address, err)
	}
	return conn, admin.Name, nil
}
