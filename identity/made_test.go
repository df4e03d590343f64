package identity

import (
	"fmt"
	"sync"
	"testing"
)

// TestMade: a remembering signer recognises exactly the signatures it made,
// over exactly the bytes it signed, under its own certificate, once each,
// within its record's bound; and every signature it recognises is one
// Verify accepts.
func TestMade(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		ca   *CA
		alg  Algorithm
	}{
		{"ecdsa", f.ca1, ECDSAP256},
		{"ed25519", f.caEd, Ed25519},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustIssue(t, tc.ca, "peer0", RolePeer, tc.alg)
			twin := mustIssue(t, tc.ca, "peer1", RolePeer, tc.alg) // same org, other certificate
			s.Remember(3)
			sign := func(msg string) []byte {
				t.Helper()
				sig, err := s.Sign([]byte(msg))
				if err != nil {
					t.Fatal(err)
				}
				return sig
			}
			made := func(id *Signer, msg string, sig []byte) bool {
				m := NewMessage([]byte(msg))
				return s.Made(id.Identity(), &m, sig)
			}
			m, err := f.reg.Member(s.Identity())
			if err != nil {
				t.Fatal(err)
			}

			sigA := sign("a")
			if err := m.Verify([]byte("a"), sigA); err != nil {
				t.Fatalf("Verify of a remembered signature: %v", err)
			}
			tampered := append([]byte(nil), sigA...)
			tampered[len(tampered)-1] ^= 1
			for _, c := range []struct {
				name string
				id   *Signer
				msg  string
				sig  []byte
			}{
				{"other bytes", s, "b", sigA},
				{"tampered signature", s, "a", tampered},
				{"truncated signature", s, "a", sigA[:len(sigA)-1]},
				{"empty signature", s, "a", nil},
				{"other certificate", twin, "a", sigA},
			} {
				if made(c.id, c.msg, c.sig) {
					t.Errorf("%s: Made = true", c.name)
				}
			}
			if !made(s, "a", sigA) {
				t.Fatal("Made(own signature) = false")
			}
			if made(s, "a", sigA) {
				t.Error("Made recognised a signature twice")
			}

			// A second signature over the same bytes replaces the first.
			first, second := sign("c"), sign("c")
			if tc.alg == ECDSAP256 && made(s, "c", first) {
				t.Error("Made recognised a replaced signature")
			}
			if !made(s, "c", second) {
				t.Error("Made(latest signature over c) = false")
			}

			// The record holds the last 3: d is pushed out by e, f, g.
			sigs := map[string][]byte{}
			for _, msg := range []string{"d", "e", "f", "g"} {
				sigs[msg] = sign(msg)
			}
			if made(s, "d", sigs["d"]) {
				t.Error("Made recognised a signature older than the record")
			}
			for _, msg := range []string{"e", "f", "g"} {
				if !made(s, msg, sigs[msg]) {
					t.Errorf("Made(%s) = false within the record", msg)
				}
			}
			if got := s.MadeMetrics(); got.Recorded != 7 || got.Recognized != 5 {
				t.Errorf("MadeMetrics = %+v, want 7 recorded, 5 recognised (a, c, e, f, g)", got)
			}

			// A signer that does not remember recognises nothing.
			if sig, _ := twin.Sign([]byte("x")); twin.Made(twin.Identity(), &Message{b: []byte("x")}, sig) {
				t.Error("a signer without Remember recognised its signature")
			}
			var nilSigner *Signer
			if nilSigner.Made(s.Identity(), &Message{b: []byte("a")}, sigA) || nilSigner.MadeMetrics() != (MadeMetrics{}) {
				t.Error("a nil signer recognised a signature")
			}
		})
	}
}

// TestMadeConcurrent signs and recognises from many goroutines (run with
// -race): every signature still in the record is recognised exactly once.
func TestMadeConcurrent(t *testing.T) {
	f := newFixture(t)
	s := mustIssue(t, f.caEd, "peer0", RolePeer, Ed25519)
	s.Remember(1 << 12)
	const workers, each = 8, 200 // 1,600 < 4,096: nothing is pushed out
	var wg sync.WaitGroup
	var mu sync.Mutex
	hits := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				msg := []byte(fmt.Sprintf("w%d-%d", w, i))
				sig, err := s.Sign(msg)
				if err != nil {
					t.Error(err)
					return
				}
				m := NewMessage(msg)
				first, again := s.Made(s.Identity(), &m, sig), s.Made(s.Identity(), &m, sig)
				mu.Lock()
				if first {
					hits++
				}
				if again {
					hits = -1 << 30
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if hits != workers*each {
		t.Fatalf("recognised %d signatures once, want %d (negative: one recognised twice)", hits, workers*each)
	}
}
