package workload

import "github.com/strand-ledger/strand/contracts/empty"

// Empty calls the empty contract: the ledger's overhead alone.
type Empty struct {
	p      *params
	submit bool
}

func newEmpty(p *params, env Env) Workload { return &Empty{p: p, submit: p.submit()} }

func (w *Empty) Name() string              { return "empty" }
func (w *Empty) Contract() string          { return empty.Name }
func (w *Empty) Params() map[string]string { return w.p.snapshot() }
func (w *Empty) Setup() [][]Op             { return nil }
func (w *Empty) Client(int) Generator {
	return GeneratorFunc(func() Op { return Op{Contract: empty.Name, Function: "nop", Submit: w.submit} })
}
