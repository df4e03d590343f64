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
	// MaxRequestMessage bounds one message a client-facing service
	// receives: one MaxTxBytes transaction or proposal inside the
	// largest envelope strand puts around it (a batch request inside an
	// api.Mux call: method name, id, deadline, peer name and height, a
	// few hundred bytes), with room to spare. A node's client server is
	// limited to it (node's roleListener), so gRPC refuses a larger
	// message on its 5-byte length prefix, before it allocates anything.
	// A batch of several requests stays under it (the gateway cuts
	// batches at 2 MiB).
	MaxRequestMessage = MaxTxBytes + 64<<10
	// MaxBlockMessage is BlockMessage of the largest batch a channel may
	// configure (256 MiB): what a receiver of blocks that does not know
	// the channel's batch size must accept.
	MaxBlockMessage = 256<<20 + blockOverhead

	// blockOverhead is what a block message may hold beyond its batch's
	// limit: one transaction over it (a transaction larger than
	// batch.maxBytes forms a block alone), and the framing, codes and
	// signature around them.
	blockOverhead = MaxTxBytes + 8<<20
)

// BlockMessage bounds one block on the wire, or one Raft message, for a
// channel whose batches hold at most batchMaxBytes of transactions (a
// Raft append carries at most 1 MiB of entries, or a single larger one,
// which is one batch). An orderer limits what other orderers send it to
// this, so even a member of the cluster cannot make it receive more.
func BlockMessage(batchMaxBytes int) int { return batchMaxBytes + blockOverhead }
