package api

// Message size limits. gRPC refuses a received message over 4 MiB unless
// told otherwise, while a channel may cut blocks of up to 256 MiB of
// transactions (batch.maxBytes; 10 MiB by default): every receiver of
// blocks must raise its limit to MaxBlockMessage, or a large block would
// stop delivery for good.
const (
	// MaxTxBytes bounds one transaction, proposal or other request a
	// client sends: gRPC's default. The orderer refuses a larger
	// transaction by name, since a server that receives blocks (an
	// orderer of a Raft cluster) accepts larger messages.
	MaxTxBytes = 4 << 20
	// MaxBlockMessage bounds one block on the wire: the largest batch a
	// channel may configure, one transaction over it (a transaction larger
	// than batch.maxBytes forms a block alone), and the framing, codes and
	// signature around them.
	MaxBlockMessage = 256<<20 + MaxTxBytes + 8<<20
)
