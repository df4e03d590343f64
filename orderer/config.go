package orderer

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
	"github.com/strand-ledger/strand/ledger"
	"github.com/strand-ledger/strand/orderer/cut"
)

// DefaultQueue is the default bound of Config.Queue.
const DefaultQueue = 10000

// DefaultQueueBytes is the default bound of Config.QueueBytes: sixteen
// transactions of api.MaxTxBytes, or 10,000 of 6.5 KiB.
const DefaultQueueBytes = 64 << 20

// Config configures an Orderer.
type Config struct {
	// Channel is the one channel this orderer orders; every transaction's
	// header must name it.
	Channel string
	// Registry validates transaction creators and the Signer.
	Registry *identity.Registry
	// Readers is the channel's read policy: a Deliver caller whose TLS
	// certificate is not of a peer or orderer of the channel must satisfy
	// it (see Orderer.AuthorizeRead). The zero value checks no caller: an
	// orderer served without TLS, in a test.
	Readers caller.Readers
	// Format is the channel's transaction format (zero means api.Format2):
	// admission refuses a transaction whose endorsed response was made
	// for another transaction (api.Format.CheckBinding), before any
	// signature check.
	Format api.Format
	// Signer signs the blocks (every one, or the checkpoints). It must
	// have role orderer and be a member the Registry accepts, so that
	// peers can verify the blocks.
	Signer *identity.Signer
	// Batch says when blocks are cut; zero fields take their defaults.
	Batch cut.Config
	// Pacer, if set, holds the peers' reported heights for pacing (stream
	// mode, single node) and may be shared by every channel the process
	// orders: a peer's backlog then counts its blocks of all of them (see
	// "Pacing by the peers" in doc.go). Nil means one of its own.
	Pacer *cut.Pacer
	// Checkpoints says which blocks are signed; the zero value signs every
	// one. The channel's peers must be configured to match
	// (committer.Channel.Checkpoints).
	Checkpoints Checkpoints
	// Store is the durable log. Blocks are appended (and fsynced) here
	// before anyone sees them. The caller opens and closes it; the orderer
	// must be its only appender.
	Store *ledger.BlockStore
	// Queue bounds the admitted transactions waiting to be cut; beyond it
	// Submit returns ErrOverloaded. Default DefaultQueue (10,000).
	Queue int
	// QueueBytes bounds the bytes of those transactions the same way:
	// the count alone would let 10,000 transactions of api.MaxTxBytes
	// (40 GiB) wait. Default DefaultQueueBytes (64 MiB); at least
	// api.MaxTxBytes, so that any admissible transaction fits.
	QueueBytes int
	// Log receives start, stop and failure messages; nil discards them.
	Log *slog.Logger
	// Clock is the time against which creator certificates expire.
	// Default time.Now.
	Clock func() time.Time
	// Genesis, if set, is the channel's genesis document: on an empty
	// store the orderer writes it as block 0, on a non-empty one it checks
	// that block 0 holds exactly it.
	Genesis []byte
	// Raft, if set, makes this orderer a member of a Raft cluster (see
	// "Raft" in the package documentation); nil is the single-node
	// orderer. Every member must have the same Genesis and Batch.
	Raft *RaftConfig
}

// EnsureDefaults fills in zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	c.Batch.EnsureDefaults()
	if c.Queue == 0 {
		c.Queue = DefaultQueue
	}
	if c.QueueBytes == 0 {
		c.QueueBytes = DefaultQueueBytes
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
}

// Validate reports the first invalid field, naming its value and what is
// allowed.
func (c *Config) Validate() error {
	switch {
	case c.Channel == "":
		return fmt.Errorf("%w: Config.Channel is empty, want the channel's name", ErrBadConfig)
	case c.Registry == nil:
		return fmt.Errorf("%w: Config.Registry is nil, want the channel's identity registry", ErrBadConfig)
	case c.Signer == nil:
		return fmt.Errorf("%w: Config.Signer is nil, want an orderer-role signer", ErrBadConfig)
	case c.Store == nil:
		return fmt.Errorf("%w: Config.Store is nil, want an open block store", ErrBadConfig)
	case !c.Format.Valid():
		return fmt.Errorf("%w: Config.Format is %d, want 1 or 2 (0 means 2)", ErrBadConfig, int(c.Format))
	case c.Queue < 1:
		return fmt.Errorf("%w: Config.Queue is %d, want at least 1 (0 means the default, %d)", ErrBadConfig, c.Queue, DefaultQueue)
	case c.QueueBytes < api.MaxTxBytes:
		return fmt.Errorf("%w: Config.QueueBytes is %d, want at least %d (api.MaxTxBytes, so that any admissible transaction fits; 0 means the default, %d)",
			ErrBadConfig, c.QueueBytes, api.MaxTxBytes, DefaultQueueBytes)
	}
	if r := c.Signer.Role(); r != identity.RoleOrderer {
		return fmt.Errorf("%w: Config.Signer %q of org %q has role %s, want orderer", ErrBadConfig, c.Signer.Name(), c.Signer.Org(), r)
	}
	m, err := c.Registry.Member(c.Signer.Identity())
	if err != nil {
		return fmt.Errorf("%w: Config.Signer %q is not valid in the registry, so peers could not verify its blocks: %w",
			ErrBadConfig, c.Signer.Name(), err)
	}
	if m.Role != identity.RoleOrderer {
		return fmt.Errorf("%w: Config.Signer %q: registry says role %s, want orderer", ErrBadConfig, c.Signer.Name(), m.Role)
	}
	if err := c.Checkpoints.Validate(); err != nil {
		return err
	}
	if err := c.Batch.Validate(); err != nil {
		return fmt.Errorf("%w: Config.Batch: %w", ErrBadConfig, err)
	}
	return nil
}
