package memnode_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/strand-ledger/strand/internal/grpctune"
	"github.com/strand-ledger/strand/memnode"
	"github.com/strand-ledger/strand/memnode/memnodetest"
)

// initialWindow reads HTTP/2 frames from fr until the first SETTINGS
// frame that is not an ack and returns its initial stream window, or
// 65535, HTTP/2's default, when it does not set one: what gRPC's dynamic
// flow control (a BDP ping with received data) starts from.
func initialWindow(fr *http2.Framer) (uint32, error) {
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return 0, fmt.Errorf("reading the first SETTINGS frame: %w", err)
		}
		if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
			if w, ok := s.Value(http2.SettingInitialWindowSize); ok {
				return w, nil
			}
			return 65535, nil
		}
	}
}

// TestServerStaticWindow: the memory node announces a static stream
// window, as every strand server does, so its answers carry no
// bandwidth-estimation pings; grpctune.ClientStreamWindow, as the nodes'
// servers for callers, so a stalled stream holds at most that much.
func TestServerStaticWindow(t *testing.T) {
	tl, n, _ := writer(t, memnode.ServerOptions{}, -1)
	cfg := tl.Client.Clone()
	cfg.NextProtos = []string{"h2"}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", n.Addr(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	w, err := initialWindow(fr)
	if err != nil {
		t.Fatal(err)
	}
	if w != grpctune.ClientStreamWindow {
		t.Fatalf("memory node's initial stream window %d, want grpctune.ClientStreamWindow %d (static flow control)", w, grpctune.ClientStreamWindow)
	}
}

// TestClientStaticWindow: the memory node's client announces grpctune's
// static window (Window: what the node answers is read as it comes). The listener here reads the client's
// first SETTINGS frame and hangs up; the dial then fails, as it should.
func TestClientStaticWindow(t *testing.T) {
	tl, err := memnodetest.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	srvCfg := tl.Server.Clone()
	srvCfg.NextProtos = []string{"h2"}
	lis, err := tls.Listen("tcp", "127.0.0.1:0", srvCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	type window struct {
		w   uint32
		err error
	}
	got := make(chan window, 1)
	go func() {
		c, err := lis.Accept()
		if err != nil {
			got <- window{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
			got <- window{err: fmt.Errorf("client preface %q: %v", preface, err)}
			return
		}
		w, err := initialWindow(http2.NewFramer(c, c))
		got <- window{w, err}
	}()
	dialed := make(chan error, 1)
	go func() {
		cl, err := memnode.Dial(memnode.ClientOptions{Address: lis.Addr().String(), TLS: tl.Client, CacheBytes: -1, CallTimeout: 2 * time.Second})
		if err == nil {
			cl.Close()
		}
		dialed <- err
	}()
	select {
	case w := <-got:
		if w.err != nil {
			t.Fatal(w.err)
		}
		if w.w != grpctune.Window {
			t.Fatalf("memory node client's initial stream window %d, want grpctune.Window %d (static flow control)", w.w, grpctune.Window)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the memory node client sent no SETTINGS frame in 30 s")
	}
	lis.Close()
	if err := <-dialed; err == nil {
		t.Fatal("Dial succeeded against a listener that hung up")
	}
}
