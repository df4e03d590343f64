package committer

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"github.com/strand-ledger/strand/api"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/policy"
)

// Channel is what the committer needs of a channel's configuration.
type Channel struct {
	// Name that every transaction's header must carry.
	Name string
	// Registry validates the identities of the channel's orgs.
	Registry *identity.Registry
	// OrdererOrgs lists the orgs whose orderer-role members sign blocks.
	OrdererOrgs []string
	// Policies maps each contract (and state namespace) to its endorsement
	// policy. A transaction for a contract not listed is INVALID_CHAINCODE.
	Policies map[string]*policy.Policy
	// Lifecycle, if set, is the policy a contract definition's admin
	// signatures must satisfy (contract/lifecycle); nil refuses every
	// definition (INVALID_CHAINCODE: the lifecycle contract is not
	// defined). Policies are the genesis definitions (sequence 1);
	// committed definitions override them from the block after theirs.
	Lifecycle *policy.Policy
	// LifecycleFollows, set when the channel names no lifecycle policy of
	// its own, replaces Lifecycle at every change of membership with the
	// default (lifecycle.DefaultPolicy) over the orgs that are members in
	// force, less Unendorsing: an org a membership update adds counts from
	// the block after it, and an org it removes stops counting. Without
	// it, removing an org of two would leave a majority no member can
	// give, and no contract could be deployed or upgraded again.
	LifecycleFollows bool
	// Unendorsing are the genesis orgs the default lifecycle policy leaves
	// out: those without peers (an orderer-only org).
	Unendorsing []string
	// Genesis, if set, is the channel's genesis document: block 0 must hold
	// exactly it as its only transaction (and is otherwise refused), and it
	// changes no state. Without it, block 0 is an ordinary block.
	Genesis []byte
	// Checkpoints, set when the channel's orderers sign only checkpoint
	// blocks (orderer.Checkpoints), accepts a block without a signature:
	// the peer trusts the mutually authenticated stream it came on, and
	// the next checkpoint's signature covers it through the hash chain. A
	// block that carries a signature is checked as ever. Unset, every
	// block must be signed.
	Checkpoints bool
	// Format is the channel's transaction format, from its genesis
	// document; zero means api.Format2 (endorsements bound to their
	// transaction). api.Format1 validates a chain written before it.
	Format api.Format
	// Own, if set, is this peer's signer, remembering the endorsements it
	// signed (identity.Signer.Remember): one of them, back in a block, is
	// known valid without a signature check (Signer.Made says why the
	// verdict cannot differ from the check's). Its certificate, revocation
	// and place in the policy are checked as any endorsement's.
	Own *identity.Signer
}

func (ch *Channel) validate() error {
	switch {
	case ch.Name == "":
		return fmt.Errorf("committer: Channel.Name is empty")
	case ch.Registry == nil:
		return fmt.Errorf("committer: Channel %q has no identity registry", ch.Name)
	case len(ch.OrdererOrgs) == 0:
		return fmt.Errorf("committer: Channel %q names no orderer org", ch.Name)
	case !ch.Format.Valid():
		return fmt.Errorf("committer: Channel %q has transaction format %d, want 1 or 2", ch.Name, int(ch.Format))
	}
	for name, p := range ch.Policies {
		if p == nil {
			return fmt.Errorf("committer: Channel %q: contract %q has a nil policy", ch.Name, name)
		}
	}
	return nil
}

// isGenesis reports whether b is the genesis block of a channel that has one.
func (ch *Channel) isGenesis(b *api.Block) bool {
	return ch.Genesis != nil && b.Header.Number == 0
}

// checkGenesis refuses a genesis block that does not hold exactly the
// channel's genesis document.
func (ch *Channel) checkGenesis(b *api.Block) error {
	if len(b.Transactions) == 1 {
		if f, ok := api.GenesisFormatDiffers(b.Transactions[0], ch.Genesis); ok {
			return fmt.Errorf("%w: block 0 holds channel %q created with transaction format %s, and this peer's channel file gives another: "+
				"set format: %s in the channel file (docs/config.md)", ErrBlockRefused, ch.Name, f, f)
		}
	}
	if len(b.Transactions) != 1 || !bytes.Equal(b.Transactions[0], ch.Genesis) {
		got := []byte(nil)
		if len(b.Transactions) > 0 {
			got = b.Transactions[0]
		}
		return fmt.Errorf("%w: block 0 holds a channel config with hash %.16x (%d transactions), this peer's channel %q has %.16x: "+
			"the peer is configured for a different channel than the orderer", ErrBlockRefused, sha256.Sum256(got), len(b.Transactions),
			ch.Name, sha256.Sum256(ch.Genesis))
	}
	return nil
}

func (ch *Channel) isOrdererOrg(org string) bool {
	for _, o := range ch.OrdererOrgs {
		if o == org {
			return true
		}
	}
	return false
}
