package workload

import (
	"encoding/json"
	"fmt"

	"github.com/strand-ledger/strand/contracts/fixedasset"
)

// FixedAsset is the state-DB study's fixed-asset workload: op create
// (blind writes of new assets), get (reads of preloaded assets) or empty
// (empty_contract), on assets of size bytes, batch assets per call.
type FixedAsset struct {
	env     Env
	p       *params
	op      string
	size    int
	batch   int
	preload int // assets per client for get
	read    bool
}

func newFixedAsset(p *params, env Env) Workload {
	w := &FixedAsset{env: env, p: p}
	w.op = p.choice("op", "create", "create", "get", "empty")
	w.size = p.int("size", 1000, 0, fixedasset.MaxByteSize)
	w.batch = p.int("batch", 1, 1, fixedasset.MaxBatch)
	w.preload = p.int("assets", 1000, 1, 1_000_000)
	// Caliper's get-asset round is a query (readOnly).
	w.read = p.choice("readonly", "evaluate", "submit", "evaluate") == "submit"
	return w
}

func (w *FixedAsset) Name() string              { return "fixedasset" }
func (w *FixedAsset) Contract() string          { return fixedasset.Name }
func (w *FixedAsset) Params() map[string]string { return w.p.snapshot() }

// uuid is Caliper's key of client c's i-th asset, with the run's tag.
func (w *FixedAsset) uuid(c, i int) string {
	return fmt.Sprintf("r%d_client%d_%d_%d", w.env.Run, c, w.size, i)
}

// preloaded marks the keys setup wrote, so that creates never reuse them.
const createdBase = 1 << 30

// Setup preloads, for get, w.preload assets per client.
func (w *FixedAsset) Setup() [][]Op {
	if w.op != "get" {
		return nil
	}
	var ops []Op
	for c := range w.env.Clients {
		for i := 0; i < w.preload; i += fixedasset.MaxBatch {
			n := min(fixedasset.MaxBatch, w.preload-i)
			ops = append(ops, w.create(c, i, n))
		}
	}
	return [][]Op{ops}
}

// create is one call creating n assets of client c from index first.
func (w *FixedAsset) create(c, first, n int) Op {
	if n == 1 {
		return Op{Contract: fixedasset.Name, Function: "create_asset", Submit: true,
			Args: []string{w.uuid(c, first), itoa(w.size), ""}}
	}
	specs := make([]fixedasset.Spec, n)
	for j := range specs {
		specs[j] = fixedasset.Spec{UUID: w.uuid(c, first+j), ByteSize: w.size}
	}
	b, _ := json.Marshal(specs)
	return Op{Contract: fixedasset.Name, Function: "create_assets_from_batch", Submit: true, Args: []string{string(b)}}
}

func (w *FixedAsset) Client(id int) Generator {
	r := rng(w.env, id)
	next := createdBase
	return GeneratorFunc(func() Op {
		switch w.op {
		case "empty":
			return Op{Contract: fixedasset.Name, Function: "empty_contract", Submit: true}
		case "create":
			op := w.create(id, next, w.batch)
			next += w.batch
			return op
		}
		if w.batch == 1 {
			return Op{Contract: fixedasset.Name, Function: "get_asset", Submit: w.read, Args: []string{w.uuid(id, r.IntN(w.preload))}}
		}
		ids := make([]string, w.batch)
		for j := range ids {
			ids[j] = w.uuid(id, r.IntN(w.preload))
		}
		b, _ := json.Marshal(ids)
		return Op{Contract: fixedasset.Name, Function: "get_assets_from_batch", Submit: w.read, Args: []string{string(b)}}
	})
}

// SetupSummary says what Setup creates.
func (w *FixedAsset) SetupSummary() string {
	if w.op != "get" {
		return "no assets to preload for op " + w.op
	}
	return fmt.Sprintf("preloaded %d assets of %d bytes for each of %d clients", w.preload, w.size, w.env.Clients)
}
