package node

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/internal/caller"
)

// verifierServer is a compute node's Verifier service: stage 1's
// signature checks for its primary (committer/remote.go), and for no one
// else: a check costs CPU, and only the primary's committer uses the
// answer.
type verifierServer struct {
	api.UnimplementedVerifierServer
	reg     *identity.Registry
	channel string
	org     string
	primary string
	txs     atomic.Uint64 // transactions checked
}

func (s *verifierServer) CheckSignatures(ctx context.Context, req *api.SignatureCheckRequest) (*api.SignatureCheckResponse, error) {
	m, who, err := caller.Member(ctx, s.reg)
	if err != nil {
		return nil, status.Errorf(codes.PermissionDenied, "node: checking signatures: %v", err)
	}
	if m.Name != s.primary || m.Org != s.org || m.Role != identity.RolePeer {
		return nil, status.Errorf(codes.PermissionDenied, "node: %s may not ask this compute node to check signatures; only its primary %s of org %s may", who, s.primary, s.org)
	}
	if req.GetChannel() != s.channel {
		return nil, status.Errorf(codes.NotFound, "node: this compute node serves channel %q, not %q", s.channel, req.GetChannel())
	}
	vs, err := committer.CheckSignatures(s.reg, s.channel, req.GetTxs())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "node: %v", err)
	}
	s.txs.Add(uint64(len(vs)))
	out := &api.SignatureCheckResponse{Verdicts: make([]*api.SignatureVerdict, len(vs))}
	for i, v := range vs {
		out.Verdicts[i] = &api.SignatureVerdict{Checked: v.Checked, Valid: v.Valid}
	}
	return out, nil
}

// remoteVerifier is a compute node as its primary's committer sees it
// (committer.Remote). A compute node that does not serve Verifier (an
// older build) is dropped from stage 1 at its first answer.
type remoteVerifier struct {
	client  api.VerifierClient
	channel string
	mu      sync.Mutex
	drop    func() // AddRemote's remove, set once it returned; guarded by mu
}

var errVerifierGone = errors.New("node: the compute node does not check signatures (an older build): no longer asked")

func (r *remoteVerifier) CheckSignatures(ctx context.Context, txs [][]byte) ([]committer.Verdict, error) {
	resp, err := r.client.CheckSignatures(ctx, &api.SignatureCheckRequest{Channel: r.channel, Txs: txs})
	if status.Code(err) == codes.Unimplemented {
		r.mu.Lock()
		drop := r.drop
		r.mu.Unlock()
		if drop != nil {
			drop() // closes the remote's stop channel; waits for nothing
		}
		return nil, errVerifierGone
	}
	if err != nil {
		return nil, err
	}
	out := make([]committer.Verdict, len(resp.GetVerdicts()))
	for i, v := range resp.GetVerdicts() {
		out[i] = committer.Verdict{Checked: v.GetChecked(), Valid: v.GetValid()}
	}
	return out, nil
}
