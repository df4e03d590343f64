package memnode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/ledger/statedb"
	"github.com/strand-ledger/strand/ledger/statedb/tiered"
)

// TestApplyRule checks Apply's rule (service): a batch from the
// published height is applied, a re-sent one is acknowledged without a
// write, and one from another height is refused with the height.
func TestApplyRule(t *testing.T) {
	// Nothing flushes on its own during the test.
	db, err := tiered.Open(t.TempDir(), tiered.Options{NoCache: true, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := newService(db, "", DefaultWatchBufferBytes)
	if err != nil {
		t.Fatal(err)
	}
	put := func(from, height uint64, val string, sync bool) *api.MemApplyResponse {
		t.Helper()
		var b statedb.Batch
		b.Put("ns", "k", []byte(val), statedb.Version{Block: height - 1})
		resp, err := s.Apply(context.Background(), encodeApply(&b, from, height, sync))
		if err != nil {
			t.Fatalf("Apply from %d to %d: %v", from, height, err)
		}
		return resp
	}
	for _, tc := range []struct {
		from, height uint64
		val          string
		applied      bool
		after        uint64 // the published height after
		want         string // k's value after
	}{
		{0, 2, "a", true, 2, "a"},
		{2, 3, "b", true, 3, "b"},
		{2, 3, "b-again", true, 3, "b"},  // re-sent: acknowledged, not written
		{0, 2, "a-again", true, 3, "b"},  // older still
		{4, 5, "gap", false, 3, "b"},     // from above the height: refused
		{1, 4, "overlap", false, 3, "b"}, // reaches past the height from below it
		{3, 4, "c", true, 4, "c"},
	} {
		resp := put(tc.from, tc.height, tc.val, false)
		if resp.GetApplied() != tc.applied || resp.GetHeight() != tc.after {
			t.Errorf("Apply from %d to %d: applied %v at height %d; want %v at %d", tc.from, tc.height, resp.GetApplied(), resp.GetHeight(), tc.applied, tc.after)
		}
		v, _, err := db.Get("ns", "k")
		if err != nil || string(v.Data) != tc.want {
			t.Errorf("after Apply from %d to %d: k = %q, %v; want %q", tc.from, tc.height, v.Data, err, tc.want)
		}
	}
	// A synced re-send of a batch applied without sync is acknowledged
	// only once storage holds it.
	if d := db.Durable(); d >= 4 {
		t.Fatalf("storage savepoint %d before any sync; want below 4", d)
	}
	if resp := put(3, 4, "c-again", true); !resp.GetApplied() || resp.GetDurable() < 4 {
		t.Errorf("synced re-send of 3→4: applied %v, durable %d; want applied and durable ≥ 4", resp.GetApplied(), resp.GetDurable())
	}
	if _, err := s.Apply(context.Background(), &api.MemApplyRequest{From: 4, Height: 4}); err == nil {
		t.Error("Apply from 4 to 4 succeeded; want a bad request")
	}
}

// FuzzDecodeApply feeds arbitrary bytes to the Apply request's decoder
// (as the server receives them): it must not panic, must refuse with
// ErrBadRequest, and what it accepts must encode back to the same request.
func FuzzDecodeApply(f *testing.F) {
	var b statedb.Batch
	b.Put("ns", "k\x00\xff", []byte("v"), statedb.Version{Block: 7, Tx: 2})
	b.Delete("other", "", statedb.Version{Block: 7, Tx: 3})
	seed, _ := proto.Marshal(encodeApply(&b, 3, 4, true))
	f.Add(seed)
	f.Add([]byte{})
	bad, _ := proto.Marshal(&api.MemApplyRequest{From: 1, Height: 2, Writes: []*api.MemWrite{{Namespace: []byte("bad ns!")}}})
	f.Add(bad)
	f.Fuzz(func(t *testing.T, raw []byte) {
		req := &api.MemApplyRequest{}
		if proto.Unmarshal(raw, req) != nil {
			return
		}
		batch, err := decodeApply(req)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("decodeApply error %v does not wrap ErrBadRequest", err)
			}
			return
		}
		again := encodeApply(batch, req.GetFrom(), req.GetHeight(), req.GetSync())
		back, err := decodeApply(again)
		if err != nil || !reflect.DeepEqual(normal(back), normal(batch)) {
			t.Fatalf("decode(encode(decode(x))) = %v, %v; want %v", back, err, batch)
		}
	})
}

// normal makes empty and nil values alike, as the wire does.
func normal(b *statedb.Batch) []statedb.Write {
	out := make([]statedb.Write, len(b.Writes))
	for i, w := range b.Writes {
		if len(w.Value) == 0 {
			w.Value = nil
		}
		out[i] = w
	}
	return out
}

// TestOneWriter: Apply is taken from one client certificate's common
// name, configured or the first to write; another peer's batches are
// refused, naming both, and change nothing.
func TestOneWriter(t *testing.T) {
	as := func(cn string) context.Context {
		cert := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
		return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}}})
	}
	batch := func(from, height uint64, val string) *api.MemApplyRequest {
		var b statedb.Batch
		b.Put("ns", "k", []byte(val), statedb.Version{Block: height - 1})
		return encodeApply(&b, from, height, false)
	}
	for _, tc := range []struct {
		configured, first, other string
	}{
		{"", "peer0.Org1", "peer0.Org2"},                    // the first to write claims the role
		{"peer0.Org2", "peer0.Org2", "peer0.Org1"},          // the configured writer, whoever comes first
		{"peer0.Org1", "peer0.Org1", "peer0.Org1-imposter"}, // names are compared whole
	} {
		db, err := tiered.Open(t.TempDir(), tiered.Options{NoCache: true})
		if err != nil {
			t.Fatal(err)
		}
		s, err := newService(db, tc.configured, DefaultWatchBufferBytes)
		if err != nil {
			t.Fatal(err)
		}
		if tc.configured != "" {
			if _, err := s.Apply(as(tc.other), batch(0, 1, "x")); status.Code(err) != codes.PermissionDenied {
				t.Errorf("writer %q configured: Apply from %q: %v, want PermissionDenied", tc.configured, tc.other, err)
			}
		}
		if resp, err := s.Apply(as(tc.first), batch(0, 1, "a")); err != nil || !resp.GetApplied() {
			t.Fatalf("writer %q: Apply from %q: %v, %v", tc.configured, tc.first, resp, err)
		}
		_, err = s.Apply(as(tc.other), batch(1, 2, "b"))
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), tc.first) || !strings.Contains(err.Error(), tc.other) {
			t.Errorf("writer %q: Apply from %q after %q: %v; want PermissionDenied naming both", tc.configured, tc.other, tc.first, err)
		}
		if v, _, _ := db.Get("ns", "k"); string(v.Data) != "a" {
			t.Errorf("after a refused writer: k = %q, want a", v.Data)
		}
		if resp, err := s.Apply(as(tc.first), batch(1, 2, "c")); err != nil || !resp.GetApplied() {
			t.Errorf("writer %q: second Apply from %q: %v, %v", tc.configured, tc.first, resp, err)
		}
		db.Close()
	}
}
