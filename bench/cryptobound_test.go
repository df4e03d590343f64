package bench

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/strand-ledger/strand/api"
	"github.com/strand-ledger/strand/identity"
)

func TestMeasureCryptoBound(t *testing.T) {
	c := cgChain(t)
	const minDur = 200 * time.Millisecond
	b, err := MeasureCryptoBound(c, 2, minDur)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(b)
	sigs := c.WorkloadTxs*3 + len(c.Blocks) - c.SetupBlocks
	switch {
	case b.Workers != 2 || b.SigsPerTx != c.SigsPerTx:
		t.Errorf("Workers %d SigsPerTx %v", b.Workers, b.SigsPerTx)
	case b.Verifies < sigs:
		t.Errorf("Verifies %d, want at least one pass over the %d signatures", b.Verifies, sigs)
	case b.Wall < minDur:
		t.Errorf("Wall %v, want at least %v", b.Wall, minDur)
	case b.CPU <= 0 || b.CPUPerTx <= 0:
		t.Errorf("CPU %v CPUPerTx %v, want > 0", b.CPU, b.CPUPerTx)
	case b.VerifiesPerSec <= 0 || b.TxPerSec <= 0 || b.TxPerSec >= b.VerifiesPerSec:
		t.Errorf("VerifiesPerSec %v TxPerSec %v", b.VerifiesPerSec, b.TxPerSec)
	}
	if want := float64(b.Verifies) / b.Wall.Seconds(); b.VerifiesPerSec != want {
		t.Errorf("VerifiesPerSec %v, want %v", b.VerifiesPerSec, want)
	}
	if b.TxPerSec != b.VerifiesPerSec/b.SigsPerTx {
		t.Errorf("TxPerSec %v, want VerifiesPerSec/SigsPerTx", b.TxPerSec)
	}
	// One verification cannot take less than a microsecond of CPU, nor more
	// than the whole measurement's CPU.
	if per := b.CPU / time.Duration(b.Verifies); per < time.Microsecond || b.CPUPerTx > b.CPU {
		t.Errorf("CPU per verify %v, CPUPerTx %v", per, b.CPUPerTx)
	}
	if s := b.String(); !strings.Contains(s, "tx/s") {
		t.Errorf("String() = %q", s)
	}
}

func TestMeasureCryptoBoundEd25519(t *testing.T) {
	c, err := GenerateChain(ChainSpec{Accounts: 40, Blocks: 2, BlockSize: 10, Seed: 1, Alg: identity.Ed25519}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := MeasureCryptoBound(c, 0, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if b.Workers < 1 || b.Verifies < 62 {
		t.Errorf("Workers %d Verifies %d", b.Workers, b.Verifies)
	}
	if b.Path != "Ed25519 batches" || b.Stock == nil || b.Stock.Path != "Ed25519 one by one" {
		t.Errorf("paths %q and stock %+v, want the nodes' batches and one by one", b.Path, b.Stock)
	}
}

// TestMeasureCryptoBoundBadSignature corrupts one signature of the last
// block at a time and expects the measurement to fail.
// Under Ed25519 the nodes' path checks batches, which must fail too.
func TestMeasureCryptoBoundBadSignature(t *testing.T) {
	for _, alg := range []identity.Algorithm{identity.ECDSAP256, identity.Ed25519} {
		t.Run(alg.String(), func(t *testing.T) { testBoundBadSignature(t, alg) })
	}
}

func testBoundBadSignature(t *testing.T, alg identity.Algorithm) {
	spec := cgSmallSpec
	spec.Alg = alg
	orig, err := GenerateChain(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	last := len(orig.Blocks) - 1
	for _, tc := range []struct {
		name    string
		corrupt func(b *api.Block, tx *api.Transaction)
	}{
		{"orderer", func(b *api.Block, _ *api.Transaction) { cbFlipBit(b.Metadata.Signature.Signature) }},
		{"creator", func(_ *api.Block, tx *api.Transaction) { cbFlipBit(tx.Signature) }},
		{"endorser", func(_ *api.Block, tx *api.Transaction) {
			// The creator's signature over the payload fails too; either
			// failure must stop the measurement.
			var p api.TxPayload
			cbMust(t, proto.Unmarshal(tx.Payload, &p))
			cbFlipBit(p.Endorsements[1].Signature)
			tx.Payload = cbMarshal(t, &p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := *orig
			c.Blocks = append([][]byte(nil), orig.Blocks...)
			var b api.Block
			cbMust(t, proto.Unmarshal(c.Blocks[last], &b))
			var tx api.Transaction
			cbMust(t, proto.Unmarshal(b.Transactions[3], &tx))
			tc.corrupt(&b, &tx)
			b.Transactions[3] = cbMarshal(t, &tx)
			c.Blocks[last] = cbMarshal(t, &b)
			if _, err := MeasureCryptoBound(&c, 2, time.Millisecond); err == nil {
				t.Fatal("MeasureCryptoBound verified a corrupted signature")
			}
		})
	}
	if _, err := MeasureCryptoBound(orig, 2, time.Millisecond); err != nil {
		t.Fatalf("the original chain no longer verifies: %v", err)
	}
	if _, err := MeasureCryptoBound(&Chain{Blocks: orig.Blocks[:1], SetupBlocks: 1, Orgs: orig.Orgs}, 1, time.Millisecond); err == nil {
		t.Fatal("MeasureCryptoBound accepted a chain without workload blocks")
	}
}

// TestChainSigs checks the sample holds exactly a validator's signatures:
// per block the orderer's, per tx the creator's and two endorsers'.
func TestChainSigs(t *testing.T) {
	c := cgChain(t)
	bs, err := chainSigs(c.Blocks[c.SetupBlocks:])
	if err != nil {
		t.Fatal(err)
	}
	blocks := len(c.Blocks) - c.SetupBlocks
	// One signature a unit, or (with batches) each block's signature
	// alone and its transactions in one share per worker: the same
	// signatures either way.
	for _, batches := range []bool{false, true} {
		us := units(bs, batches, 2)
		var sigs []chainSig
		for _, u := range us {
			sigs = append(sigs, u...)
		}
		if want := blocks + 3*c.WorkloadTxs; len(sigs) != want {
			t.Fatalf("batches %v: %d signatures, want %d", batches, len(sigs), want)
		}
		if want := blocks * 3; batches && len(us) != want {
			t.Fatalf("%d units with batches, want %d (a block signature and two shares a block)", len(us), want)
		}
		roles := map[string]int{}
		for _, s := range sigs {
			roles[s.signer.GetOrg()]++
		}
		if roles["OrdererOrg"] != blocks || roles["Org1"]+roles["Org2"] != 3*c.WorkloadTxs {
			t.Errorf("batches %v: signatures by org: %v", batches, roles)
		}
	}
}

func cbFlipBit(b []byte) { b[len(b)/2] ^= 0x40 }

func cbMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func cbMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	cbMust(t, err)
	return b
}

// BenchmarkMeasureCryptoBound reports the crypto bound of a chain of the
// default account count (one pass over its signatures per op).
func BenchmarkMeasureCryptoBound(b *testing.B) {
	for _, alg := range []identity.Algorithm{identity.ECDSAP256, identity.Ed25519} {
		b.Run(alg.String(), func(b *testing.B) {
			c, err := GenerateChain(ChainSpec{Blocks: 20, BlockSize: 100, Seed: 1, Alg: alg}, nil)
			if err != nil {
				b.Fatal(err)
			}
			var last CryptoBound
			for b.Loop() {
				if last, err = MeasureCryptoBound(c, 0, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(last.TxPerSec, "tx/s")
			b.ReportMetric(float64(last.CPUPerTx.Microseconds()), "CPU-µs/tx")
		})
	}
}
