package workload

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/strand-ledger/strand/contracts/kv"
)

// YCSB's core workloads (WORKLOADS.md); StreamChain's YCSB-90 and YCSB-50
// are update-heavy variants.
var ycsbMixes = map[string]string{
	"a":  "read=50,update=50",
	"b":  "read=95,update=5",
	"c":  "read=100",
	"d":  "read=95,insert=5",
	"e":  "scan=95,insert=5",
	"f":  "read=50,rmw=50",
	"90": "read=10,update=90",
	"50": "read=50,update=50",
}

var ycsbOps = []string{"read", "update", "insert", "scan", "rmw"}

// YCSB is the YCSB workload over the kv contract.
type YCSB struct {
	env       Env
	p         *params
	mix       mix
	records   int
	valueSize int
	scanMax   int
	latest    bool // D: reads favour the latest inserts
	dist      distribution
	read      bool // submit reads (true) or evaluate them
	tag       string
}

func newYCSB(p *params, env Env) Workload {
	w := &YCSB{env: env, p: p, tag: fmt.Sprintf("user%d_", env.Run)}
	w.mix = p.mix("mix", "a", ycsbMixes, ycsbOps...)
	w.records = p.int("records", 1000, 1, 100_000_000)
	w.valueSize = p.int("value_size", 1000, 1, 1<<20)
	w.scanMax = p.int("scan_max", 100, 1, kv.MaxScan)
	s := p.float("zipf", 0.99, 0, 10)
	if s == 1 {
		p.fail("zipf", "1", "0 (uniform), between 0 and 1 (YCSB's zipfian), or above 1 (Zipf's law); not 1")
	}
	w.latest = p.choice("distribution", "auto", "auto", "zipfian", "latest") == "latest"
	if v := p.used["distribution"]; v == "auto" {
		w.latest = p.used["mix"] == "d" || p.used["mix"] == "D"
	}
	w.read = p.submit()
	w.dist = newDistribution(w.records, s)
	return w
}

func (w *YCSB) Name() string              { return "ycsb" }
func (w *YCSB) Contract() string          { return kv.Name }
func (w *YCSB) Params() map[string]string { return w.p.snapshot() }

// key is record i's key: YCSB's "user" and a hash of i, so that popular
// records are spread over the key space (scrambled zipfian), with the
// run's tag.
func (w *YCSB) key(i int) string {
	h := fnv.New64a()
	var b [8]byte
	for j := range b {
		b[j] = byte(uint64(i) >> (8 * j))
	}
	h.Write(b[:])
	return fmt.Sprintf("%s%020d", w.tag, h.Sum64())
}

// insertKey is the key of client c's n-th insert.
func (w *YCSB) insertKey(c, n int) string { return fmt.Sprintf("%si%d_%d", w.tag, c, n) }

// Setup loads the records, kv.MaxLoad per transaction, fewer for big
// values: about loadTxBytes of them. A load of 2 MiB (its former size)
// took about 0.2 s to endorse under the race detector alone, and past
// the contract timeout of 5 s on CI's busy 2 cores (29 Nov); smaller
// loads also pipeline through endorsement, ordering and commit.
func (w *YCSB) Setup() [][]Op {
	per := min(kv.MaxLoad, max(1, loadTxBytes/(w.valueSize+64)))
	r := rand.New(rand.NewPCG(w.env.Seed, 0))
	var ops []Op
	for i := 0; i < w.records; i += per {
		recs := make([]kv.Record, 0, per)
		for j := i; j < min(i+per, w.records); j++ {
			recs = append(recs, kv.Record{Key: w.key(j), Value: value(r, w.valueSize)})
		}
		b, _ := json.Marshal(recs)
		ops = append(ops, Op{Contract: kv.Name, Function: "load", Args: []string{string(b)}, Submit: true})
	}
	return [][]Op{ops}
}

// loadTxBytes is about the most record bytes one load transaction
// carries (Setup).
const loadTxBytes = 512 << 10

// value returns n random lowercase letters.
func value(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(r.IntN(26))
	}
	return string(b)
}

func (w *YCSB) Client(id int) Generator {
	r := rng(w.env, id)
	choose := w.dist.chooser(r)
	inserted := 0
	// pool is a block of random bytes; values are slices of it, so that
	// drawing a value costs no more than drawing a key.
	pool := value(r, 4*w.valueSize)
	val := func() string { o := r.IntN(3 * w.valueSize); return pool[o : o+w.valueSize] }
	readKey := func() string {
		if !w.latest {
			return w.key(choose())
		}
		// latest: the most recent of this client's inserts and the
		// preloaded records, skewed towards the newest.
		i := w.records + inserted - 1 - choose()%(w.records+inserted)
		if i >= w.records {
			return w.insertKey(id, i-w.records)
		}
		return w.key(i)
	}
	return GeneratorFunc(func() Op {
		op := Op{Contract: kv.Name, Function: w.mix.pick(r), Submit: true}
		switch op.Function {
		case "read":
			op.Args, op.Submit = []string{readKey()}, w.read
		case "update":
			op.Args = []string{w.key(choose()), val()}
		case "rmw":
			op.Function, op.Args = "read_modify_write", []string{w.key(choose()), val()}
		case "insert":
			op.Args = []string{w.insertKey(id, inserted), val()}
			inserted++
		case "scan":
			op.Args, op.Submit = []string{w.key(choose()), itoa(1 + r.IntN(w.scanMax))}, w.read
		}
		return op
	})
}

// SetupSummary says what Setup creates.
func (w *YCSB) SetupSummary() string {
	return fmt.Sprintf("loaded %d records of %d bytes", w.records, w.valueSize)
}
