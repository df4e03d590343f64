// Package node assembles a strand peer or orderer process. This part of it
// owns the two configuration files a node reads at start and the mutual TLS
// its connections use:
//
//   - ChannelConfig (LoadChannel): the channel every node of a network
//     shares: its orgs and their CAs, the peers' and orderers' addresses,
//     the batch limits of the ordering service and the contracts with their
//     endorsement policies. It later becomes the genesis block; Hash lets
//     two nodes check they run the same one.
//   - NodeConfig (LoadNode): one process: its role, name, org, listen
//     address, data directory, identity and TLS key pairs, state database,
//     commit pipeline, metrics and logging. docs/config.md documents every
//     field.
//   - TLSConfigs and LoadTLS: TLS 1.3 with client certificates required
//     and verified on both sides against the CAs of the channel's orgs.
//   - The listener (listen.go): one TLS listener per node whose
//     connections go, by the role of their client certificate, to one of
//     its gRPC servers, each with its own receive limit: the channel's
//     orderers to an orderer's cluster server (api.BlockMessage of the
//     channel's batch.maxBytes),
//     everyone else to the client server (api.MaxRequestMessage).
//
// Invariants:
//   - Both files are decoded strictly: an unknown field is refused with its
//     line, and every invalid value is reported as a *ConfigError (wrapping
//     ErrConfig) naming the file, the line, the field's YAML path (such as
//     orgs[1].peers[0].address), the value and what is allowed. Validate
//     reports every bad field, not only the first.
//   - Relative paths in a file are resolved against the file's directory
//     when it is loaded, so a configuration does not depend on the working
//     directory. The loaded structs hold the resolved paths.
//   - Loading reads files and nothing else: it opens no database, socket or
//     listener.
//   - No caller but a channel's orderer reaches a server whose receive
//     limit is larger than one request, and gRPC refuses a message over
//     its server's limit on its length prefix, before allocating for it:
//     a node never holds a message it must refuse for its size.
//
// Caller's duties: call Validate again after changing a loaded config in
// code; call NodeConfig.CheckChannel to check that the node appears in the
// channel with its role and org before starting it.
package node
