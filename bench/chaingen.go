package bench

// GenerateChain pre-generates a fully signed Smallbank chain that a
// validating peer can replay from block 0, so that a validator benchmark
// measures validation alone, not endorsement or ordering.
//
// Invariants of a generated chain:
//   - Blocks are numbered from 0 and hash-chained; each block's data hash
//     covers its transactions and the orderer signs its header hash.
//   - The first SetupBlocks blocks create every account; the rest hold
//     Blocks × BlockSize transactions of Caliper's "modify" mix.
//   - Every transaction decodes VALID (api.DecodeTx), carries both peers'
//     endorsements, and passes MVCC when the chain is validated in order: no
//     two transactions of one block touch the same key, and every read names
//     the version an earlier block wrote.
//   - The chain is a function of the Spec (Seed included) except for the
//     keys and certificates, which the identity package draws at random, and
//     for randomised (ECDSA) signatures.
//
// Only signing and marshalling run in parallel; the Smallbank model and the
// read/write sets are built sequentially first, so their order never
// depends on scheduling.

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

const (
	chainChannel       = "bench"
	chainNamespace     = "smallbank" // the contract's name and its state namespace
	chainPolicy        = "AND('Org1.peer','Org2.peer')"
	chainOrdererOrg    = "OrdererOrg"
	chainSetupTxAccts  = 100 // accounts created by one setup transaction
	chainSetupBlockTxs = 100 // transactions in one setup block
	chainNonceSize     = 24
	chainTxInterval    = int64(time.Millisecond) // between consecutive tx timestamps
)

// chainEpoch is the timestamp of the first transaction: a constant, so that
// a chain depends only on its Spec.
var chainEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// Default ChainSpec values.
const (
	DefaultChainAccounts  = 10_000
	DefaultChainBlocks    = 100
	DefaultChainBlockSize = 100
)

// ChainSpec says what chain GenerateChain makes.
type ChainSpec struct {
	Accounts  int // Smallbank accounts (default 10,000); at least 2×BlockSize
	Blocks    int // workload blocks after the setup blocks (default 100)
	BlockSize int // transactions per workload block (default 100)
	Seed      int64
	Alg       identity.Algorithm // of every key: CAs, clients, peers, orderer
}

// EnsureDefaults fills in zero Accounts, Blocks and BlockSize.
func (s *ChainSpec) EnsureDefaults() {
	if s.Accounts == 0 {
		s.Accounts = DefaultChainAccounts
	}
	if s.Blocks == 0 {
		s.Blocks = DefaultChainBlocks
	}
	if s.BlockSize == 0 {
		s.BlockSize = DefaultChainBlockSize
	}
}

// Validate reports a field whose value cannot make a chain. Every block
// must find untouched accounts for all its transactions, each of which
// touches at most two accounts, hence Accounts ≥ 2×BlockSize.
func (s ChainSpec) Validate() error {
	switch {
	case s.BlockSize < 1:
		return fmt.Errorf("bench: chain spec: BlockSize %d: want at least 1", s.BlockSize)
	case s.Blocks < 0:
		return fmt.Errorf("bench: chain spec: Blocks %d: want 0 or more", s.Blocks)
	case s.Accounts < 2 || s.Accounts < 2*s.BlockSize:
		return fmt.Errorf("bench: chain spec: Accounts %d: want at least 2 and at least 2×BlockSize (%d)",
			s.Accounts, 2*s.BlockSize)
	}
	return nil
}

// Chain is a generated chain and what a validator should make of it.
type Chain struct {
	Spec       ChainSpec
	Channel    string         // "bench"
	Contract   string         // "smallbank", also the state namespace
	Policy     string         // endorsement policy: "AND('Org1.peer','Org2.peer')"
	Orgs       []identity.Org // Org1, Org2 (clients and peers) and OrdererOrg
	OrdererOrg string

	Blocks      [][]byte // encoded api.Block, numbered from 0; setup blocks first
	SetupBlocks int
	WorkloadTxs int
	// SigsPerTx is the signatures a validator verifies per workload
	// transaction: creator, two endorsers, and 1/BlockSize of the block's
	// orderer signature.
	SigsPerTx float64

	// InitialTotal is Σ(checking + savings) after the setup blocks;
	// FinalTotal is that sum after the whole chain.
	InitialTotal, FinalTotal int64

	final *sbModel
	calls []chainCall // each transaction's function and args, for tests
}

// chainCall is the contract call a transaction's proposal made.
type chainCall struct {
	function string
	args     [][]byte
}

// ExpectedState returns every key of namespace "smallbank" and its value
// after the whole chain is applied. The map is the caller's.
func (c *Chain) ExpectedState() map[string][]byte { return c.final.state() }

// chainSigners are the identities that sign a chain.
type chainSigners struct {
	orgs    []identity.Org
	clients [2]*identity.Signer // client0.Org1, client0.Org2
	peers   [2]*identity.Signer // peer0.Org1, peer0.Org2: the endorsers
	orderer *identity.Signer
}

func newChainSigners(alg identity.Algorithm) (*chainSigners, error) {
	s := new(chainSigners)
	for i, org := range []string{"Org1", "Org2"} {
		ca, err := identity.NewCA(org, alg)
		if err != nil {
			return nil, fmt.Errorf("bench: chain: CA of %s: %w", org, err)
		}
		if s.clients[i], err = ca.Issue("client0."+org, identity.RoleClient, alg); err != nil {
			return nil, fmt.Errorf("bench: chain: client of %s: %w", org, err)
		}
		if s.peers[i], err = ca.Issue("peer0."+org, identity.RolePeer, alg); err != nil {
			return nil, fmt.Errorf("bench: chain: peer of %s: %w", org, err)
		}
		s.orgs = append(s.orgs, identity.Org{ID: ca.Org(), CACerts: [][]byte{ca.CertDER()}})
	}
	ca, err := identity.NewCA(chainOrdererOrg, alg)
	if err != nil {
		return nil, fmt.Errorf("bench: chain: CA of %s: %w", chainOrdererOrg, err)
	}
	if s.orderer, err = ca.Issue("orderer0", identity.RoleOrderer, alg); err != nil {
		return nil, fmt.Errorf("bench: chain: orderer: %w", err)
	}
	s.orgs = append(s.orgs, identity.Org{ID: ca.Org(), CACerts: [][]byte{ca.CertDER()}})
	return s, nil
}

// chainTxPlan is everything about one transaction but its signatures.
type chainTxPlan struct {
	creator *identity.Signer
	header  *api.TxHeader
	op      sbOp
}

// chainPlan is the sequential part of generation: every transaction of
// every block, and the model's state after them.
type chainPlan struct {
	txs         []chainTxPlan
	blockStart  []int // txs[blockStart[b]:blockStart[b+1]] are block b's
	setupBlocks int
	initial     int64
	model       *sbModel
}

func planChain(spec ChainSpec, signers *chainSigners) (*chainPlan, error) {
	p := &chainPlan{model: newSbModel(spec.Accounts)}
	opRng := rand.New(rand.NewPCG(uint64(spec.Seed), 1))
	nonceRng := rand.New(rand.NewPCG(uint64(spec.Seed), 2))
	add := func(op sbOp) {
		creator := signers.clients[len(p.txs)%2]
		nonce := make([]byte, chainNonceSize)
		for i := 0; i < chainNonceSize; i += 8 {
			v := nonceRng.Uint64()
			for j := i; j < i+8; j++ {
				nonce[j] = byte(v)
				v >>= 8
			}
		}
		id := creator.Identity()
		p.txs = append(p.txs, chainTxPlan{creator: creator, op: op, header: &api.TxHeader{
			Channel:           chainChannel,
			TxId:              api.TxID(nonce, id),
			Creator:           id,
			Nonce:             nonce,
			TimestampUnixNano: chainEpoch + int64(len(p.txs))*chainTxInterval,
		}})
	}

	// Setup: chainSetupTxAccts accounts per tx, chainSetupBlockTxs txs per block.
	block, tx := uint64(0), 0
	for first := 0; first < spec.Accounts; first += chainSetupTxAccts {
		if tx == chainSetupBlockTxs {
			block, tx = block+1, 0
		}
		if tx == 0 {
			p.blockStart = append(p.blockStart, len(p.txs))
		}
		add(p.model.createAccounts(first, min(chainSetupTxAccts, spec.Accounts-first), block, uint32(tx)))
		tx++
	}
	p.setupBlocks = len(p.blockStart)
	p.initial = p.model.total()

	for b := range spec.Blocks {
		block := uint64(p.setupBlocks + b)
		p.blockStart = append(p.blockStart, len(p.txs))
		for t := range spec.BlockSize {
			op, err := p.model.modify(opRng, block, uint32(t))
			if err != nil {
				return nil, err
			}
			add(op)
		}
	}
	p.blockStart = append(p.blockStart, len(p.txs))
	return p, nil
}

// GenerateChain makes the chain spec describes (zero fields take their
// defaults). progress, if not nil, is called on the calling goroutine as
// signing advances; total counts transactions plus blocks.
func GenerateChain(spec ChainSpec, progress func(done, total int)) (*Chain, error) {
	spec.EnsureDefaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	signers, err := newChainSigners(spec.Alg)
	if err != nil {
		return nil, err
	}
	plan, err := planChain(spec, signers)
	if err != nil {
		return nil, err
	}
	nblocks := len(plan.blockStart) - 1
	done, total := 0, len(plan.txs)+nblocks
	report := func(n int) {
		done += n
		if progress != nil {
			progress(done, total)
		}
	}

	txs := make([][]byte, len(plan.txs))
	err = chainParallel(len(plan.txs), func(i int) (err error) {
		txs[i], err = buildChainTx(&plan.txs[i], signers)
		return err
	}, report)
	if err != nil {
		return nil, err
	}

	headers := make([]*api.BlockHeader, nblocks)
	var prev []byte
	for b := range headers {
		headers[b] = &api.BlockHeader{
			Number:       uint64(b),
			PreviousHash: prev,
			DataHash:     api.DataHash(txs[plan.blockStart[b]:plan.blockStart[b+1]]),
		}
		prev = api.HeaderHash(headers[b])
	}
	blocks := make([][]byte, nblocks)
	err = chainParallel(nblocks, func(b int) (err error) {
		blocks[b], err = buildChainBlock(headers[b], txs[plan.blockStart[b]:plan.blockStart[b+1]], signers.orderer)
		return err
	}, report)
	if err != nil {
		return nil, err
	}

	calls := make([]chainCall, len(plan.txs))
	for i := range plan.txs {
		calls[i] = chainCall{plan.txs[i].op.function, plan.txs[i].op.args}
	}
	return &Chain{
		Spec:         spec,
		Channel:      chainChannel,
		Contract:     chainNamespace,
		Policy:       chainPolicy,
		Orgs:         signers.orgs,
		OrdererOrg:   chainOrdererOrg,
		Blocks:       blocks,
		SetupBlocks:  plan.setupBlocks,
		WorkloadTxs:  spec.Blocks * spec.BlockSize,
		SigsPerTx:    3 + 1/float64(spec.BlockSize),
		InitialTotal: plan.initial,
		FinalTotal:   plan.model.total(),
		final:        plan.model,
		calls:        calls,
	}, nil
}

// buildChainTx makes the proposal, the response both peers endorse, and the
// transaction the creator signs (api.BuildTx), and returns its bytes.
func buildChainTx(p *chainTxPlan, s *chainSigners) ([]byte, error) {
	raw, _, err := api.BuildTx(api.TxSpec{
		Channel: p.header.Channel, Contract: chainNamespace, Function: p.op.function, Args: p.op.args,
		Nonce: p.header.Nonce, Timestamp: p.header.TimestampUnixNano,
		RWSet: &api.RWSet{Namespaces: []*api.NsRWSet{p.op.ns}},
	}, p.creator, []api.Signer{s.peers[0], s.peers[1]})
	if err != nil {
		return nil, fmt.Errorf("bench: chain: tx %s: %w", p.header.TxId, err)
	}
	return raw, nil
}

func buildChainBlock(h *api.BlockHeader, txs [][]byte, orderer *identity.Signer) ([]byte, error) {
	b, err := api.BuildBlock(h.Number, h.PreviousHash, txs, orderer)
	if err != nil {
		return nil, fmt.Errorf("bench: chain: %w", err)
	}
	return proto.Marshal(b)
}

// chainParallel runs fn(0..n-1) on runtime.NumCPU() goroutines, in chunks,
// and calls report with the count of each finished chunk on the calling
// goroutine. It returns the first error; the other workers then stop.
func chainParallel(n int, fn func(i int) error, report func(int)) error {
	const chunk = 8
	workers := min(runtime.NumCPU(), (n+chunk-1)/chunk)
	var (
		next     atomic.Int64
		failed   atomic.Bool
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
	)
	finished := make(chan int, 4*max(workers, 1))
	for range workers {
		wg.Go(func() {
			for !failed.Load() {
				start := int(next.Add(chunk)) - chunk
				if start >= n {
					return
				}
				end := min(start+chunk, n)
				for i := start; i < end; i++ {
					if err := fn(i); err != nil {
						errOnce.Do(func() { firstErr = err })
						failed.Store(true)
						return
					}
				}
				finished <- end - start
			}
		})
	}
	go func() {
		wg.Wait()
		close(finished)
	}()
	for k := range finished {
		report(k)
	}
	return firstErr // written before the workers ended, hence before close
}
