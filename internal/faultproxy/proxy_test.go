package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echo serves a line echo server on 127.0.0.1 until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// roundTrip sends a line and reads it back within d; it returns the
// error of the read.
func roundTrip(c net.Conn, r *bufio.Reader, d time.Duration) error {
	c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err == nil && line != "ping\n" {
		return errors.New("echoed " + strings.TrimSpace(line))
	}
	return err
}

func TestProxyModes(t *testing.T) {
	p, err := Listen("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, r := dial(t, p.Addr())
	if err := roundTrip(c, r, 5*time.Second); err != nil {
		t.Fatalf("forwarding: %v", err)
	}

	// Blackhole: the open connection and a new one go silent, no error.
	p.Set(Blackhole)
	if err := roundTrip(c, r, 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("open connection in blackhole: %v, want a timeout", err)
	}
	c2, r2 := dial(t, p.Addr())
	if err := roundTrip(c2, r2, 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("new connection in blackhole: %v, want a timeout", err)
	}

	// Heal: connections that lived through the cut are closed; new ones
	// forward.
	p.Set(Forward)
	if err := roundTrip(c, r, 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("blackholed connection after heal: %v, want it closed", err)
	}
	c3, r3 := dial(t, p.Addr())
	if err := roundTrip(c3, r3, 5*time.Second); err != nil {
		t.Fatalf("after heal: %v", err)
	}

	// Drop: the open connection is closed, new ones are closed at once.
	p.Set(Drop)
	if err := roundTrip(c3, r3, 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("open connection in drop: %v, want it closed", err)
	}
	c4, r4 := dial(t, p.Addr())
	if err := roundTrip(c4, r4, 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("new connection in drop: %v, want it closed", err)
	}
	p.Set(Forward)
	c5, r5 := dial(t, p.Addr())
	if err := roundTrip(c5, r5, 5*time.Second); err != nil {
		t.Fatalf("after drop and heal: %v", err)
	}
	if got := p.Mode().String(); got != "forward" {
		t.Errorf("mode %s, want forward", got)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestListenBadTarget(t *testing.T) {
	if _, err := Listen("127.0.0.1:0", "nowhere"); err == nil || !strings.Contains(err.Error(), `target "nowhere"`) {
		t.Fatalf("Listen with target nowhere: %v, want an error naming it", err)
	}
}

// A target that is down: the accepted connection is closed.
func TestProxyTargetDown(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	p, err := Listen("127.0.0.1:0", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, r := dial(t, p.Addr())
	if err := roundTrip(c, r, 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("target down: %v, want the connection closed", err)
	}
}
