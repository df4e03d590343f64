package orderer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/strand-ledger/strand/identity"
)

// adminCall calls TransferLeader at member i over real gRPC with mutual
// TLS, presenting clientTLS.
func (c *cluster) adminCall(i int, clientTLS *tls.Config, to uint64) (uint64, error) {
	c.t.Helper()
	conn, err := grpc.NewClient(c.members[i].addr, grpc.WithTransportCredentials(credentials.NewTLS(clientTLS)))
	if err != nil {
		c.t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return TransferLeaderClient(ctx, conn, to)
}

// load submits fresh transactions round-robin over the members in idx
// until stop is closed (or the test ends), and returns a function that
// waits for it and returns the ids submitted. A submission refused while
// no leader is known is retried, as a client would on 503; one refused by
// a removed member goes to the next member. The members must not be
// stopped while it runs.
func (c *cluster) load(stop <-chan struct{}, idx ...int) func() map[string]bool {
	ids := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var n atomic.Int64
	var failed atomic.Pointer[error]
	ended := make(chan struct{})
	ms := make([]*Orderer, len(idx)) // c.members may grow meanwhile
	for i, j := range idx {
		ms[i] = c.members[j].o
	}
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-ended:
					return
				default:
				}
				k := n.Add(1)
				raw, id := c.n.tx(c.t, fmt.Sprintf("load-%d", k))
				m := ms[int(k)%len(ms)]
				for next := int(k); ; {
					err := m.Submit(context.Background(), raw)
					if err == nil {
						break
					}
					if errors.Is(err, ErrRemoved) { // as a client would: try another orderer
						next++
						m = ms[next%len(ms)]
						continue
					}
					if !errors.Is(err, ErrUnavailable) {
						failed.Store(&err)
						return
					}
					select {
					case <-ended:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
				mu.Lock()
				ids[id] = true
				mu.Unlock()
				_ = w
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	c.t.Cleanup(func() { close(ended); wg.Wait() })
	return func() map[string]bool {
		wg.Wait()
		if err := failed.Load(); err != nil {
			c.t.Fatalf("load: %v", *err)
		}
		return ids
	}
}

// TestTransferLeader: an orderer org's admin moves leadership to a
// follower over the Admin service (real gRPC, mutual TLS) while load
// runs; the new leader logs the transfer as the cause, every
// transaction is ordered once, and every member holds the same chain.
// Other callers are refused.
func TestTransferLeader(t *testing.T) {
	cl := newCluster(t, 3, raftBlock, nil)
	old := cl.leader()
	to := uint64((old+1)%3 + 1)
	_, adminTLS := cl.tlsPair(cl.n.ordererCA, "admin", identity.RoleAdmin)
	_, org1AdminTLS := cl.tlsPair(cl.n.org1CA, "admin1", identity.RoleAdmin)
	for _, c := range []struct {
		name string
		tls  *tls.Config
		want string
	}{
		{"a peer org's admin", org1AdminTLS, "not an admin of an orderer org"},
		{"an orderer", cl.members[old].clientTLS, "has role orderer, want admin"},
	} {
		if _, err := cl.adminCall(old, c.tls, to); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want PermissionDenied naming %q", c.name, err, c.want)
		}
	}
	if _, err := cl.adminCall(old, adminTLS, 9); status.Code(err) != codes.InvalidArgument {
		t.Errorf("transfer to a non-member: %v, want InvalidArgument", err)
	}

	stop := make(chan struct{})
	wait := cl.load(stop, 0, 1, 2)
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	// Asked at a follower that is not the target: it passes the request
	// to the leader.
	via := 3 - old - int(to-1)
	leader, err := cl.adminCall(via, adminTLS, to)
	took := time.Since(start)
	if err != nil || leader != to {
		t.Fatalf("transfer to %d via orderer %d: leader %d, %v", to, via+1, leader, err)
	}
	t.Logf("leadership moved from %d to %d in %s under load", old+1, to, took)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	want := wait()
	if got := cl.leader(); got != int(to-1) {
		t.Fatalf("leader %d after the transfer, want %d", got+1, to)
	}
	line := cl.leaderLine(int(to-1), "state=StateLeader", fmt.Sprintf("previous=%d", old+1))
	if !strings.Contains(line, "leader transfer") {
		t.Errorf("the new leader does not name the transfer as the cause:\n%s", line)
	}
	cl.checkAll(want)
	// Back again, asked at the leader itself.
	if leader, err := cl.adminCall(int(to-1), adminTLS, uint64(old+1)); err != nil || leader != uint64(old+1) {
		t.Fatalf("transfer back to %d: leader %d, %v", old+1, leader, err)
	}
	for id := range cl.submitN(10, "after", 0, 1, 2) {
		want[id] = true
	}
	cl.checkAll(want)
}
