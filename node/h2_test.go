package node_test

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Conn is a raw HTTP/2 connection over TLS to a gRPC server: it sends
// what no gRPC client sends, such as a message whose length prefix
// declares more bytes than ever follow. Each stream's outcome (the gRPC
// status of its trailers, or a reset) arrives on the channel call
// returns.
type h2Conn struct {
	c  *tls.Conn
	fr *http2.Framer

	wmu    sync.Mutex // serialises writes
	next   uint32     // the next stream id
	window int        // the server's initial stream window; set before dialH2 returns

	mu   sync.Mutex
	ends map[uint32]chan string
}

// dialH2 connects with tlsCfg (ALPN h2) and waits for the server's
// settings and connection window, so that calls can send what its stream
// window allows.
func dialH2(t *testing.T, addr string, tlsCfg *tls.Config) *h2Conn {
	t.Helper()
	cfg := tlsCfg.Clone()
	cfg.NextProtos = []string{"h2"}
	raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, cfg)
	if err := c.Handshake(); err != nil {
		t.Fatalf("TLS handshake with %s: %v", addr, err)
	}
	h := &h2Conn{c: c, fr: http2.NewFramer(c, c), next: 1, window: 65535, ends: map[uint32]chan string{}}
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := h.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ready := make(chan struct{})
	go h.read(ready)
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s sent no settings and connection window in 10 s", addr)
	}
	return h
}

// read handles the server's frames until the connection ends; then every
// stream still open ends with the read error. It closes ready once the
// server's settings and connection window have arrived.
func (h *h2Conn) read(ready chan struct{}) {
	var settings, window bool
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			h.mu.Lock()
			for id, ch := range h.ends {
				ch <- "connection: " + err.Error()
				delete(h.ends, id)
			}
			h.mu.Unlock()
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if w, ok := f.Value(http2.SettingInitialWindowSize); ok && ready != nil {
					h.window = int(w)
				}
				h.write(func() error { return h.fr.WriteSettingsAck() })
				settings = true
			}
		case *http2.WindowUpdateFrame:
			window = window || f.StreamID == 0
		case *http2.PingFrame:
			if !f.IsAck() {
				h.write(func() error { return h.fr.WritePing(true, f.Data) })
			}
		case *http2.MetaHeadersFrame:
			if st := f.PseudoValue("status"); st != "" && st != "200" {
				h.end(f.StreamID, "HTTP status "+st)
			} else if code := field(f, "grpc-status"); code != "" {
				h.end(f.StreamID, fmt.Sprintf("grpc-status %s: %s", code, field(f, "grpc-message")))
			}
		case *http2.RSTStreamFrame:
			h.end(f.StreamID, "reset: "+f.ErrCode.String())
		}
		if settings && window && ready != nil {
			close(ready)
			ready = nil
		}
	}
}

// field returns the value of the regular header field name, "" if none.
func field(f *http2.MetaHeadersFrame, name string) string {
	for _, hf := range f.RegularFields() {
		if hf.Name == name {
			return hf.Value
		}
	}
	return ""
}

func (h *h2Conn) end(id uint32, outcome string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.ends[id]; ok {
		ch <- outcome
		delete(h.ends, id)
	}
}

func (h *h2Conn) write(f func() error) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	return f()
}

// call opens a stream to method and sends one message's 5-byte gRPC
// prefix declaring declared bytes, then body (which may be shorter), as
// much of it as the server's stream window allows, and leaves the stream
// open: the sender stalls. The outcome of the stream arrives on the
// returned channel.
func (h *h2Conn) call(t *testing.T, method string, declared uint32, body []byte) <-chan string {
	t.Helper()
	var hdr bytes.Buffer
	enc := hpack.NewEncoder(&hdr)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":path", method}, {":authority", "strand"},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	ch := make(chan string, 1)
	err := h.write(func() error {
		id := h.next
		h.next += 2
		h.mu.Lock()
		h.ends[id] = ch
		h.mu.Unlock()
		if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hdr.Bytes(), EndHeaders: true}); err != nil {
			return err
		}
		prefix := make([]byte, 5)
		binary.BigEndian.PutUint32(prefix[1:], declared)
		data := append(prefix, body...)
		data = data[:min(len(data), h.window)]
		for len(data) > 0 { // frames of at most the default 16 KiB
			n := min(len(data), 16<<10)
			if err := h.fr.WriteData(id, false, data[:n]); err != nil {
				return err
			}
			data = data[n:]
		}
		return nil
	})
	if err != nil {
		t.Fatalf("sending %s: %v", method, err)
	}
	return ch
}
