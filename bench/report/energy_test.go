package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/bench"
	"github.com/strand-ledger/strand/energy"
)

func withEnergy(r *bench.Result, source energy.Source) *bench.Result {
	p := energy.ModelParams{ActiveWatts: 8.5, IdleWatts: 1.44, Cores: 2}
	e := &bench.RunEnergy{Source: source, Label: energy.Label(source, &p),
		Procs: []bench.ProcEnergy{{Name: "strand", Joules: 30, Watts: 10, JPerTx: 0.1, TxPerSecPerJ: 10}},
		Total: bench.ProcEnergy{Name: "network (2 cores)", Joules: 30, Watts: 10, JPerTx: 0.1, TxPerSecPerJ: 10}}
	if source == energy.SourceModel {
		e.Model = &p
	} else {
		e.Procs = nil
	}
	r.Energy = e
	return r
}

// TestEnergyEverywhere: the table, the CSV, the HTML and the comparison
// carry the energy figures with their source and model parameters, and
// a comparison across sources says it is not one.
func TestEnergyEverywhere(t *testing.T) {
	const label = "model (active 8.50 W/core, idle 1.44 W/core, 2 cores)"
	rs := []*bench.Result{withEnergy(result("a", 1), energy.SourceModel)}
	var tb bytes.Buffer
	WriteTable(&tb, rs)
	for _, s := range []string{"tx/s/J", "energy source", label, "network (2 cores)", "100.000 mJ/tx"} {
		if !strings.Contains(tb.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, tb.String())
		}
	}
	var cb bytes.Buffer
	if err := WriteCSV(&cb, rs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]string{}
	for i, h := range rows[0] {
		col[h] = rows[1][i]
	}
	if col["energy_watts"] != "10.00" || col["energy_mj_per_tx"] != "100.000" || col["tx_per_s_per_j"] != "10.0" || col["energy_source"] != label {
		t.Errorf("CSV energy columns %v", col)
	}
	var hb bytes.Buffer
	if err := WriteHTML(&hb, "t", rs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hb.String(), `<table class="energy"><caption>energy, source: `+label) {
		t.Errorf("HTML lacks the energy table with its source")
	}
	var out bytes.Buffer
	Compare(&out, rs, []*bench.Result{withEnergy(result("a", 2), energy.SourceRAPL)})
	for _, s := range []string{"tx/s/J", "energy source", label, "rapl", "DIFFERENT"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("compare lacks %q:\n%s", s, out.String())
		}
	}
	out.Reset()
	Compare(&out, rs, rs)
	if strings.Contains(out.String(), "DIFFERENT") || !strings.Contains(out.String(), "same") {
		t.Errorf("compare of one source:\n%s", out.String())
	}
}
