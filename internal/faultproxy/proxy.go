// Package faultproxy is a TCP proxy for fault-injection tests: it listens
// on one address, forwards every connection to a target, and on command
// cuts the link in one of two ways, then heals it.
//
//   - Blackhole: bytes in either direction are read and thrown away, on
//     the connections open at the cut and on new ones, which are accepted
//     but never connected to the target. Neither side sees an error: to
//     them the network went silent, as in a partition.
//   - Drop: open connections are reset and new ones are closed as soon as
//     they are accepted: the target looks down.
//
// Heal closes every connection that lived through a cut (a blackholed
// stream has lost bytes, so it can never carry its protocol again) and
// forwards new connections as before. The proxy knows nothing of what it
// carries; it is for tests on 127.0.0.1, not for production.
package faultproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// Mode is the state of a Proxy.
type Mode int

const (
	Forward   Mode = iota // carry bytes both ways
	Blackhole             // accept and discard, silently
	Drop                  // reset and refuse
)

func (m Mode) String() string {
	switch m {
	case Forward:
		return "forward"
	case Blackhole:
		return "blackhole"
	case Drop:
		return "drop"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Proxy forwards the connections to one address to a target address.
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		mode   Mode
		conns  map[*pipe]struct{}
		closed bool
	}
}

// pipe is one proxied connection: the accepted one and, while forwarding,
// the one to the target (nil for a connection accepted during a cut).
type pipe struct {
	client, server net.Conn
	// cut is set, under Proxy.mu, when the pipe lives through a cut; its
	// copiers then discard instead of writing.
	cut bool
}

// Listen starts a proxy on addr ("127.0.0.1:0" picks a free port) that
// forwards to target.
func Listen(addr, target string) (*Proxy, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: want host:port: %w", target, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{ln: ln, target: target}
	p.mu.conns = map[*pipe]struct{}{}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Mode returns the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.mode
}

// Set switches to mode m: Blackhole and Drop cut the link (see the package
// comment), Forward heals it. Setting the current mode again does
// nothing.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m == p.mu.mode || p.mu.closed {
		return
	}
	p.mu.mode = m
	for c := range p.mu.conns {
		switch {
		case m == Drop || (m == Forward && c.cut):
			c.close()
			delete(p.mu.conns, c)
		case m == Blackhole:
			c.cut = true
		}
	}
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.mu.closed = true
	for c := range p.mu.conns {
		c.close()
	}
	p.mu.conns = nil
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue // a transient accept error (EMFILE, ...)
		}
		p.wg.Add(1)
		go p.serve(conn)
	}
}

// serve carries one connection until either side closes it or a cut
// ends it.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	c := &pipe{client: client}
	switch p.Mode() {
	case Drop:
		client.Close()
		return
	case Forward:
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			return
		}
		c.server = server
	}
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		c.close()
		return
	}
	// The mode may have changed while dialling; a cut pipe discards.
	c.cut = c.server == nil || p.mu.mode == Blackhole
	if p.mu.mode == Drop {
		p.mu.Unlock()
		c.close()
		return
	}
	p.mu.conns[c] = struct{}{}
	p.mu.Unlock()

	var done sync.WaitGroup
	done.Add(1)
	go func() {
		defer done.Done()
		p.copy(c, c.server, c.client)
	}()
	if c.server != nil {
		p.copy(c, c.client, c.server)
	}
	done.Wait()
	c.close()
	p.mu.Lock()
	delete(p.mu.conns, c)
	p.mu.Unlock()
}

// copy moves bytes from src to dst until src fails, writing them only
// while the pipe is not cut. dst may be nil (a pipe accepted during a
// cut): everything is discarded.
func (p *Proxy) copy(c *pipe, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut := c.cut
			p.mu.Unlock()
			if !cut && dst != nil {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
		}
		if err != nil {
			break
		}
	}
	// Closing both ends wakes the other copier.
	c.close()
}

func (c *pipe) close() {
	c.client.Close()
	if c.server != nil {
		c.server.Close()
	}
}
