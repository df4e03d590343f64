package report

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"io"
	"slices"
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

// withBusy is a --net round's energy: two peers with busy figures (as
// bench.roundMeter computes them: 46.82 J over 4 s and 18.44 J over 1.5
// s, 1000 commits), an orderer without, and the peers' figure.
func withBusy(r *bench.Result) *bench.Result {
	r = withEnergy(r, energy.SourceModel)
	e := r.Energy
	e.Procs = []bench.ProcEnergy{
		{Name: "orderer0", Joules: 30, Watts: 3, JPerTx: 0.03, TxPerSecPerJ: 33.3},
		{Name: "peer0", Joules: 64.1, Watts: 6.41, JPerTx: 0.0641, TxPerSecPerJ: 15.6,
			BusyS: 4, BusyJoules: 46.82, BusyWatts: 11.7051, BusyJPerTx: 0.04682, BusyTxPerSecPerJ: 21.36},
		{Name: "peer1", Joules: 45.2, Watts: 4.52, JPerTx: 0.0452, TxPerSecPerJ: 22.1,
			BusyS: 1.5, BusyJoules: 18.44, BusyWatts: 12.293, BusyJPerTx: 0.01844, BusyTxPerSecPerJ: 54.23},
	}
	e.PeersBusy = &bench.ProcEnergy{Name: "peers (per peer, 2)", BusyS: 2.75, BusyJoules: 32.63, BusyWatts: 65.26 / 5.5, BusyJPerTx: 0.03263, BusyTxPerSecPerJ: 1000 / 32.63}
	e.BusySource = bench.PeerBusySource
	return r
}

// tableCells returns the cells of each row of the page's tables of class
// class, parsed as strict XML.
func tableCells(t *testing.T, page, class string) [][]string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(page))
	dec.Strict = true
	var rows [][]string
	var in, cell bool
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return rows
		}
		if err != nil {
			t.Fatalf("HTML not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			switch tok.Name.Local {
			case "table":
				in = slices.Contains(tok.Attr, xml.Attr{Name: xml.Name{Local: "class"}, Value: class})
			case "tr":
				if in {
					rows = append(rows, nil)
				}
			case "td", "th":
				cell = in
				text.Reset()
			}
		case xml.CharData:
			if cell {
				text.Write(tok)
			}
		case xml.EndElement:
			switch tok.Name.Local {
			case "table":
				in = false
			case "td", "th":
				if cell {
					rows[len(rows)-1] = append(rows[len(rows)-1], text.String())
					cell = false
				}
			}
		}
	}
}

// TestBusyEnergyEverywhere: a round's busy-period figures reach the
// table, the CSV, the HTML report and the comparison beside the
// whole-interval ones, with their source; a round without them shows
// "-" and says why.
func TestBusyEnergyEverywhere(t *testing.T) {
	rs := []*bench.Result{withBusy(result("net", 1))}
	var tb bytes.Buffer
	WriteTable(&tb, rs)
	for _, s := range []string{"busy tx/s/J", "peers (per peer, 2)", "30.6", "11.87", "54.2", bench.PeerBusySource} {
		if !strings.Contains(tb.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, tb.String())
		}
	}

	var cb bytes.Buffer
	if err := WriteCSV(&cb, append(rs, withEnergy(result("embedded", 1), energy.SourceModel))); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(row int) map[string]string {
		m := map[string]string{}
		for i, h := range rows[0] {
			m[h] = rows[row][i]
		}
		return m
	}
	if c := col(1); c["busy_energy_watts"] != "11.87" || c["busy_energy_mj_per_tx"] != "32.630" || c["busy_tx_per_s_per_j"] != "30.6" || c["tx_per_s_per_j"] != "10.0" {
		t.Errorf("CSV busy columns of the --net round: %v", c)
	}
	if c := col(2); c["busy_energy_watts"] != "-" || c["busy_tx_per_s_per_j"] != "-" {
		t.Errorf("CSV busy columns of a round without busy figures: %v", c)
	}

	var hb bytes.Buffer
	if err := WriteHTML(&hb, "t", rs); err != nil {
		t.Fatal(err)
	}
	cells := map[string][]string{}
	for _, row := range tableCells(t, hb.String(), "energy") {
		cells[row[0]] = row[1:]
	}
	if h := cells["process"]; !slices.Equal(h, []string{"W", "mJ/tx", "tx/s/J", "busy W", "busy mJ/tx", "busy tx/s/J"}) {
		t.Errorf("HTML energy header %v", h)
	}
	for name, want := range map[string][]string{
		"peer0":               {"6.41", "64.100", "15.6", "11.71", "46.820", "21.4"},
		"orderer0":            {"3.00", "30.000", "33.3", "-", "-", "-"},
		"peers (per peer, 2)": {"-", "-", "-", "11.87", "32.630", "30.6"},
	} {
		if !slices.Equal(cells[name], want) {
			t.Errorf("HTML energy row %s: %v, want %v", name, cells[name], want)
		}
	}
	if !strings.Contains(hb.String(), esc("busy periods: "+bench.PeerBusySource)) {
		t.Errorf("HTML does not name the busy periods' source")
	}

	var out bytes.Buffer
	b := withBusy(result("net", 1))
	b.Energy.PeersBusy.BusyTxPerSecPerJ = 61.3
	Compare(&out, rs, []*bench.Result{b})
	for _, s := range []string{"busy tx/s/J (per peer)", "30.6", "61.3", "2.00"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("compare lacks %q:\n%s", s, out.String())
		}
	}
}
