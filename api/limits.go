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
	// MaxBlockMessage bounds one block on the wire: the largest batch a
	// channel may configure, one transaction over it (a transaction larger
	// than batch.maxBytes forms a block alone), and the framing, codes and
	// signature around them.
	MaxBlockMessage = 256<<20 + MaxTxBytes + 8<<20
)
