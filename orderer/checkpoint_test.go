package orderer

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/orderer/cut"
)

func TestCheckpointerRules(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(d int) time.Time { return t0.Add(time.Duration(d) * time.Millisecond) }
	for _, c := range []struct {
		name string
		cfg  Checkpoints
		at   []time.Time // when blocks 0, 1, ... are sealed
		want []uint64    // the blocks signed
	}{
		{"zero value: every block", Checkpoints{}, []time.Time{ms(0), ms(0), ms(0)}, []uint64{0, 1, 2}},
		{"every 3rd block", Checkpoints{Blocks: 3}, slices.Repeat([]time.Time{ms(0)}, 8), []uint64{0, 3, 6}},
		{"interval", Checkpoints{Interval: 10 * time.Millisecond},
			[]time.Time{ms(0), ms(4), ms(9), ms(10), ms(11), ms(30), ms(31)}, []uint64{0, 3, 5}},
		{"both: whichever comes first, the interval restarts at every signature", Checkpoints{Blocks: 4, Interval: 10 * time.Millisecond},
			[]time.Time{ms(0), ms(1), ms(2), ms(3), ms(4), ms(14), ms(15), ms(16), ms(17)}, []uint64{0, 4, 5, 8}},
	} {
		k := checkpointer{cfg: c.cfg}
		var got []uint64
		for n, at := range c.at {
			if k.sign(uint64(n), at) {
				got = append(got, uint64(n))
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: signed %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCheckpointsValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Checkpoints
		want string
	}{
		{Checkpoints{Blocks: -1}, "Checkpoints.Blocks is -1"},
		{Checkpoints{Blocks: 1_000_001}, "want 0 (no count rule) to 1000000"},
		{Checkpoints{Interval: -time.Second}, "Checkpoints.Interval is -1s"},
		{Checkpoints{Interval: 2 * time.Hour}, "want 0 (no time rule) to 1h"},
	} {
		err := c.cfg.Validate()
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrBadConfig with %q", c.cfg, err, c.want)
		}
	}
}

// An orderer that signs every 3rd block delivers the others unsigned, and
// each checkpoint's signature verifies over a chain that links through the
// unsigned blocks.
func TestCheckpointSignatures(t *testing.T) {
	n := newTestNet(t)
	store := openStore(t, t.TempDir())
	cfg := n.config(store, cut.Config{MaxTxs: 1, Timeout: time.Hour})
	cfg.Checkpoints = Checkpoints{Blocks: 3}
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	defer o.Close()
	submitAll(t, n, o, keys("c", 7)...)
	var prev []byte
	for _, b := range blocks(t, o, 0, 7) {
		num := b.Header.Number
		if !bytes.Equal(b.Header.PreviousHash, prev) {
			t.Fatalf("block %d does not link to block %d", num, num-1)
		}
		prev = api.HeaderHash(b.Header)
		sig := b.GetMetadata().GetSignature()
		if want := num%3 == 0; (sig != nil) != want {
			t.Fatalf("block %d: signed %v, want %v", num, sig != nil, want)
		}
		if sig == nil {
			continue
		}
		m, err := n.reg.Member(sig.GetSigner())
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Verify(prev, sig.GetSignature()); err != nil {
			t.Fatalf("checkpoint %d: %v", num, err)
		}
	}
	if got := o.Metrics().Signed; got != 3 {
		t.Errorf("Metrics.Signed %d, want 3 (blocks 0, 3, 6)", got)
	}
	cfg.Checkpoints = Checkpoints{Blocks: -2}
	if _, err := New(cfg); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "Checkpoints.Blocks is -2") {
		t.Errorf("New with Checkpoints.Blocks -2: %v, want ErrBadConfig naming it", err)
	}
}
