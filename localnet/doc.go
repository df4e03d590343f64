// Package localnet generates the crypto material and configuration files of
// a local strand network: one CA per org, a signing identity and a TLS
// certificate per node and per client, a channel file and one node file per
// peer and orderer, all on 127.0.0.1 and all loadable by node.LoadChannel
// and node.LoadNode.
//
// Layout of the generated directory:
//
//	channel.yaml
//	nodes/<node>.yaml
//	crypto/<Org>/ca.pem, ca-key.pem
//	crypto/<Org>/<node>/cert.pem, key.pem, tls-cert.pem, tls-key.pem
//	crypto/<Org>/clients/client0/cert.pem, key.pem, tls-cert.pem, tls-key.pem
//	layout.json                 the Layout, for Load (paths relative to it)
//
// With Spec.Memnodes, every peer also gets a memory node of its own:
//
//	nodes/memnode.<peer>.yaml   its memnode file (node.LoadMemnode); writer: <peer>
//	crypto/<Org>/peer<i>/memnode/tls-cert.pem, tls-key.pem
//
// and the peer's node file keeps its state there (stateDB.backend memnode).
//
// Running it as processes (Up, Down, Status) adds:
//
//	data/<node>/                its ledger (the node file's dataDir)
//	logs/<node>.log             its stdout and stderr, appended
//	pids/<node>.pid             the PID of its process
//
// A node's process runs `<strand> <kind> start --config <node file>`
// (kind: peer, orderer or memnode; memory nodes start before, and stop
// after, the peers);
// Down and Status take a recorded PID for the node only while
// /proc/<pid>/cmdline ends with exactly those arguments, so a PID reused
// by another process is never signalled. Conn connects a client of an org
// to a peer over mutual TLS. Verify checks every node's chain through its
// API (`strand net verify`). Spec.ClusterPorts gives orderers cluster
// addresses for fault-injecting proxies (internal/faultproxy).
// Peer orgs are named Org1..OrgN, peers peer<i>.Org<n>, and the orderers
// orderer<i> of OrdererOrg. Private keys are written with mode 0600.
//
// Invariants: Generate never overwrites: it refuses a directory that exists
// and is not empty. It is for tests and demos: the CA keys lie beside the
// network they sign for.
package localnet
