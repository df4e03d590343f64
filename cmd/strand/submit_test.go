package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/orderer"
)

// TestSubmitPatiently: a membership or org update is submitted again
// while the orderer answers 503 (no Raft leader yet, as just after net
// up), taken at the first 200, and any other refusal ends it at once.
func TestSubmitPatiently(t *testing.T) {
	answers := func(codes ...int32) (func() (*api.SubmitResponse, error), *int) {
		calls := 0
		return func() (*api.SubmitResponse, error) {
			c := codes[min(calls, len(codes)-1)]
			calls++
			return &api.SubmitResponse{Status: c, Message: "m"}, nil
		}, &calls
	}
	ctx := context.Background()
	submit, calls := answers(orderer.StatusUnavailable, orderer.StatusUnavailable, orderer.StatusOK)
	if err := submitPatiently(ctx, "orderer0", submit, time.Millisecond); err != nil || *calls != 3 {
		t.Fatalf("503, 503, 200: %v after %d calls; want taken at the third", err, *calls)
	}
	submit, calls = answers(orderer.StatusUnavailable, orderer.StatusForbidden)
	if err := submitPatiently(ctx, "orderer0", submit, time.Millisecond); err == nil || !strings.Contains(err.Error(), "(403)") || *calls != 2 {
		t.Fatalf("503, 403: %v after %d calls; want the 403 at the second", err, *calls)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	submit, _ = answers(orderer.StatusUnavailable)
	if err := submitPatiently(short, "orderer0", submit, time.Millisecond); err == nil || !strings.Contains(err.Error(), "until the timeout") {
		t.Fatalf("503 forever: %v; want the timeout named", err)
	}
}
