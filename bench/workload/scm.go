package workload

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/strand-ledger/strand/contracts/scm"
)

// SCM mixes: 95% or 99% transactional. The split within each class is
// strand's choice (StreamChain does not publish one): of the
// transactional share, place_order 40, update_order 30, update_inventory
// 20, create_contract 10; of the analytical share, days_of_supply and
// bullwhip half each. An update_order drawn while none of the client's
// orders is due (orderLag) places a new order instead.
var scmMixes = map[string]string{
	"scm95": "place_order=380,update_order=285,update_inventory=190,create_contract=95,days_of_supply=25,bullwhip=25",
	"scm99": "place_order=396,update_order=297,update_inventory=198,create_contract=99,days_of_supply=5,bullwhip=5",
}

var scmOps = []string{"place_order", "update_order", "update_inventory", "create_contract", "days_of_supply", "bullwhip"}

// SCM is StreamChain's supply-chain workload.
type SCM struct {
	env                          Env
	p                            *params
	mix                          mix
	vendors, products, contracts int
	analytic                     bool // submit analytical queries (true) or evaluate them
}

func newSCM(p *params, env Env) Workload {
	w := &SCM{env: env, p: p}
	w.mix = p.mix("mix", "scm95", scmMixes, scmOps...)
	w.vendors = p.int("vendors", 50, 2, scm.MaxVendors)
	w.products = p.int("products", 500, 1, scm.MaxProducts)
	w.contracts = p.int("contracts", 6000, 1, 10_000_000)
	w.analytic = p.submit()
	return w
}

func (w *SCM) Name() string              { return "scm" }
func (w *SCM) Contract() string          { return scm.Name }
func (w *SCM) Params() map[string]string { return w.p.snapshot() }

func (w *SCM) contractID(i int) string { return fmt.Sprintf("r%d_%d", w.env.Run, i) }

// contract draws a contract between two distinct vendors; the seller makes
// the product.
func (w *SCM) contract(r *rand.Rand, id string) scm.Contract {
	p := r.IntN(w.products)
	seller := p % w.vendors
	buyer := r.IntN(w.vendors - 1)
	if buyer >= seller {
		buyer++
	}
	return scm.Contract{ID: id, Buyer: buyer, Seller: seller, Product: p, Price: 1 + r.Int64N(1000)}
}

// Setup writes vendors and products, then the contracts.
func (w *SCM) Setup() [][]Op {
	r := rand.New(rand.NewPCG(w.env.Seed, 0))
	var cs []Op
	for i := 0; i < w.contracts; i += scm.MaxBatch {
		batch := make([]scm.Contract, 0, scm.MaxBatch)
		for j := i; j < min(i+scm.MaxBatch, w.contracts); j++ {
			batch = append(batch, w.contract(r, w.contractID(j)))
		}
		b, _ := json.Marshal(batch)
		cs = append(cs, Op{Contract: scm.Name, Function: "create_contracts", Submit: true, Args: []string{string(b)}})
	}
	setup := Op{Contract: scm.Name, Function: "setup", Submit: true, Args: []string{itoa(w.vendors), itoa(w.products)}}
	return [][]Op{{setup}, cs}
}

// orderLag is how many of its own operations a client draws between two
// steps of one order (place, ship, deliver): its transactions run
// concurrently, so a step drawn right after the previous one would
// usually reach the endorsers before that one committed and fail.
const orderLag = 64

// openOrder is an order of this client not yet delivered.
type openOrder struct {
	id      string
	shipped bool
	last    int // the client's operation count at its last step
}

func (w *SCM) Client(id int) Generator {
	r := rng(w.env, id)
	var placed, created, ops int
	var open []openOrder // oldest first
	return GeneratorFunc(func() Op {
		ops++
		op := Op{Contract: scm.Name, Function: w.mix.pick(r), Submit: true}
		if op.Function == "update_order" && (len(open) == 0 || ops-open[0].last < orderLag) {
			op.Function = "place_order"
		}
		switch op.Function {
		case "place_order":
			oid := fmt.Sprintf("r%d_%d_%d", w.env.Run, id, placed)
			placed++
			open = append(open, openOrder{id: oid, last: ops})
			op.Args = []string{oid, w.contractID(r.IntN(w.contracts)), strconv.Itoa(1 + r.IntN(100))}
		case "update_order":
			o := open[0]
			open = open[1:]
			if o.shipped {
				op.Args = []string{o.id, scm.Delivered}
			} else {
				op.Args = []string{o.id, scm.Shipped}
				open = append(open, openOrder{id: o.id, shipped: true, last: ops})
			}
		case "update_inventory":
			delta := -(1 + r.IntN(50)) // a sale
			if r.IntN(4) == 0 {
				delta = 100 + r.IntN(400) // a restock
			}
			op.Args = []string{itoa(r.IntN(w.vendors)), itoa(r.IntN(w.products)), itoa(delta)}
		case "create_contract":
			c := w.contract(r, fmt.Sprintf("r%d_c%d_%d", w.env.Run, id, created))
			created++
			op.Args = []string{c.ID, itoa(c.Buyer), itoa(c.Seller), itoa(c.Product), strconv.FormatInt(c.Price, 10)}
		case "days_of_supply":
			op.Args, op.Submit = []string{itoa(r.IntN(w.vendors))}, w.analytic
		case "bullwhip":
			op.Submit = w.analytic
		}
		return op
	})
}

// SetupSummary says what Setup creates.
func (w *SCM) SetupSummary() string {
	return fmt.Sprintf("created %d vendors, %d products and %d contracts", w.vendors, w.products, w.contracts)
}
