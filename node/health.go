package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/strand-ledger/strand/api"
)

// A node's metrics listener also answers the questions a supervisor or a
// load balancer asks:
//
//   - /healthz: the process is alive and serving HTTP (always 200 while it
//     runs; a hung process does not answer).
//   - /readyz: the node can do its job now. 200 "ready", or 503 with the
//     reason on one line. A peer is ready when its ledger is open, it is
//     still following the ordering service and no orderer has a block
//     readyLag or more past the peer's next one (one that is a few blocks
//     behind under load still serves). An orderer is ready when it runs and,
//     in a Raft cluster, is a member and a leader is known.
//   - /: these endpoints, instead of a bare 404.
//
// The answer is computed on each request, from the node's own state (an
// orderer) or one short round of questions to the orderers (a peer, at
// most readyTimeout).

// readyLag is how many blocks behind the ordering service a peer may be
// and still be ready.
const readyLag = 50

// readyTimeout bounds a peer's questions to the orderers for /readyz.
const readyTimeout = 2 * time.Second

// endpoint is one path the metrics listener serves, with what it is for.
type endpoint struct{ path, about string }

func endpoints(profile bool) []endpoint {
	eps := []endpoint{
		{"/metrics", "Prometheus metrics (strand_build_info names this build)"},
		{"/healthz", "200 while the process is alive"},
		{"/readyz", "200 when the node can serve now, else 503 with the reason"},
	}
	if profile {
		eps = append(eps, endpoint{"/debug/pprof/", "Go profiles"})
	}
	return eps
}

// indexHandler lists the endpoints at /, and with a 404 at any other
// unknown path.
func indexHandler(name string, eps []endpoint) http.HandlerFunc {
	var b strings.Builder
	fmt.Fprintf(&b, "strand node %s serves:\n", name)
	for _, e := range eps {
		fmt.Fprintf(&b, "  %-15s %s\n", e.path, e.about)
	}
	page := b.String()
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if r.URL.Path != "/" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, "404: %s is not served here.\n", r.URL.Path)
		}
		fmt.Fprint(w, page)
	}
}

func healthzHandler(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

// readyzHandler answers 200 "ready" when ready returns nil, else 503 and
// the reason.
func readyzHandler(ready func(context.Context) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := ready(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		fmt.Fprintln(w, "ready")
	}
}

// peerReadiness decides a peer's /readyz.
type peerReadiness struct {
	channel  string
	next     func() uint64 // the block the committer takes next (Committer.Next)
	orderers func() []api.OrdererClient
	// stopped is why the peer stopped following the ordering service; nil
	// while it follows.
	stopped atomic.Pointer[error]
}

func (pr *peerReadiness) ready(ctx context.Context) error {
	if e := pr.stopped.Load(); e != nil {
		return fmt.Errorf("the peer stopped following the ordering service (restart it): %w", *e)
	}
	next := pr.next()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	ahead, answered := probeOrderers(ctx, pr.orderers(), pr.channel, next+readyLag-1)
	switch {
	case ahead != nil:
		return fmt.Errorf("catching up: at height %d, and orderer %v has block %d (ready within %d blocks)", next, ahead, next+readyLag-1, readyLag)
	case answered == 0:
		return errors.New("no orderer answered within " + readyTimeout.String() + ": the peer cannot know whether it is caught up, nor order transactions")
	}
	return nil
}

// probeOrderers asks every orderer at once whether it has block n and
// returns one that has it (nil if none) and how many answered.
func probeOrderers(ctx context.Context, orderers []api.OrdererClient, channel string, n uint64) (ahead api.OrdererClient, answered int) {
	type answer struct {
		o   api.OrdererClient
		has bool
		err error
	}
	answers := make(chan answer, len(orderers))
	for _, o := range orderers {
		go func() {
			stream, err := o.Deliver(ctx, &api.DeliverRequest{Channel: channel, Start: n, Stop: true})
			if err != nil {
				answers <- answer{o: o, err: err}
				return
			}
			resp, err := stream.Recv()
			switch {
			case err == nil:
				answers <- answer{o: o, has: len(resp.GetBlock()) > 0}
			case errors.Is(err, io.EOF): // the stream ended at once: no block n
				answers <- answer{o: o}
			default: // down, refused, or too slow
				answers <- answer{o: o, err: err}
			}
		}()
	}
	for range orderers {
		a := <-answers
		if a.err != nil {
			continue
		}
		answered++
		if a.has && ahead == nil {
			ahead = a.o
		}
	}
	return ahead, answered
}
