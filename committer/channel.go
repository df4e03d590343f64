package committer

import (
	"fmt"

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
}

func (ch *Channel) validate() error {
	switch {
	case ch.Name == "":
		return fmt.Errorf("committer: Channel.Name is empty")
	case ch.Registry == nil:
		return fmt.Errorf("committer: Channel %q has no identity registry", ch.Name)
	case len(ch.OrdererOrgs) == 0:
		return fmt.Errorf("committer: Channel %q names no orderer org", ch.Name)
	}
	for name, p := range ch.Policies {
		if p == nil {
			return fmt.Errorf("committer: Channel %q: contract %q has a nil policy", ch.Name, name)
		}
	}
	return nil
}

func (ch *Channel) rules() map[string]*rule {
	m := make(map[string]*rule, len(ch.Policies))
	for name, p := range ch.Policies {
		m[name] = &rule{pol: p, orgs: p.Orgs()}
	}
	return m
}

func (ch *Channel) isOrdererOrg(org string) bool {
	for _, o := range ch.OrdererOrgs {
		if o == org {
			return true
		}
	}
	return false
}
