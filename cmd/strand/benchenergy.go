package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/strand-ledger/strand/bench"
	"github.com/strand-ledger/strand/energy"
)

// energyFlags choose the energy meter of a benchmark.
type energyFlags struct {
	source    string
	modelFile string
	model     energy.ModelParams
	every     time.Duration
}

func bindEnergy(fl *pflag.FlagSet, f *energyFlags) {
	fl.StringVar(&f.source, "energy-source", "", "energy meter: rapl, model, or empty for RAPL where this machine has it and the model where not")
	fl.StringVar(&f.modelFile, "energy-model", "", "model file (active_watts, idle_watts, cores), as `strand energy calibrate --save` writes it")
	fl.Float64Var(&f.model.ActiveWatts, "active-watts", 0, fmt.Sprintf("model: one busy core's power, W (default %.2f, or the model file's)", energy.DefaultActiveWatts))
	fl.Float64Var(&f.model.IdleWatts, "idle-watts", 0, fmt.Sprintf("model: one idle core's power, W (default %.2f, or the model file's)", energy.DefaultIdleWatts))
	fl.IntVar(&f.model.Cores, "model-cores", 0, "model: cores charged (default: the peer's --workers, else this machine's cores)")
	fl.DurationVar(&f.every, "energy-every", bench.DefaultEnergyEvery, "energy log period between the readings at busy edges (the study's, without edge readings, was 10ms)")
}

// config returns the meter configuration the flags name; flags override
// the model file, which overrides the defaults.
func (f energyFlags) config() (energy.Config, error) {
	c := energy.Config{Source: energy.Source(f.source)}
	if f.modelFile != "" {
		p, err := energy.LoadModel(f.modelFile)
		if err != nil {
			return c, fmt.Errorf("--energy-model: %w", err)
		}
		c.Model = p
		c.Model.Cores = 0 // the peer's cores, unless --model-cores
	}
	for _, o := range []struct {
		flag string
		v    float64
		dst  *float64
	}{{"--active-watts", f.model.ActiveWatts, &c.Model.ActiveWatts}, {"--idle-watts", f.model.IdleWatts, &c.Model.IdleWatts}} {
		if o.v < 0 {
			return c, fmt.Errorf("%s %v: want a power ≥ 0 W", o.flag, o.v)
		}
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	if f.model.Cores < 0 {
		return c, fmt.Errorf("--model-cores %d: want ≥ 1, or 0 for the peer's cores", f.model.Cores)
	}
	if f.model.Cores > 0 {
		c.Model.Cores = f.model.Cores
	}
	check := c
	check.EnsureDefaults()
	if err := check.Validate(); err != nil {
		return c, fmt.Errorf("energy flags: %w", err)
	}
	if f.every < time.Millisecond || f.every > time.Second {
		return c, fmt.Errorf("--energy-every %v: want 1ms to 1s", f.every)
	}
	return c, nil
}

// chooseSource makes a benchmark's default source explicit, once, before
// it runs: with no --energy-source, RAPL where it can be read, the model
// where the machine has none, and the model with a warning on warn where
// RAPL exists but cannot be read (energy_uj is root-only since Linux
// 5.10), so that a benchmark still runs on such a machine and says which
// source it used. The energy package itself never falls back from
// unreadable RAPL.
func chooseSource(c *energy.Config, warn io.Writer) {
	if c.Source != "" {
		return
	}
	root := c.PowercapRoot
	if root == "" {
		root = energy.DefaultPowercapRoot
	}
	_, err := energy.OpenRAPL(root, c.RAPLDomains)
	switch {
	case err == nil:
		c.Source = energy.SourceRAPL
	case errors.Is(err, energy.ErrNoRAPL):
		c.Source = energy.SourceModel
	default:
		c.Source = energy.SourceModel
		fmt.Fprintf(warn, "warning: %v\nwarning: energy figures come from the model; run as root for RAPL, or pass --energy-source model\n", err)
	}
}

// validatorPreset reproduces one of the energy study's figures on
// strand's validator benchmark.
type validatorPreset struct {
	about      string
	blockSizes string
	workers    string // "" all cores; "all" 1..NumCPU
	reparse    string // "off", "both"
	rates      string
	repeat     int // rounds of rates; the quick form runs one
	txs        int // transactions per replay
}

// presetFlags are the flags a preset sets.
var presetFlags = []string{"block-size", "mode", "workers", "reparse", "rate", "repeat", "txs", "blocks"}

var validatorPresets = map[string]validatorPreset{
	"fig7a": {about: "the study's Fig. 7a: tx/s/J against block size 10, 25, 50, 100, 250",
		blockSizes: "10,25,50,100,250", reparse: "off", txs: 10000},
	"fig8a": {about: "the study's Fig. 8a: tx/s/J against the peer's cores, 1 to all, block size 100",
		blockSizes: "100", workers: "all", reparse: "off", txs: 10000},
	"fig10": {about: "the study's Fig. 10: parse-once (block cache) against decoding every transaction at every stage, block size 100, 1 to all cores",
		blockSizes: "100", workers: "all", reparse: "both", txs: 10000},
	"idle": {about: "idle exclusion: one chain replayed at full speed, then at 100%, 50% and 25% of that rate, four rounds interleaved",
		blockSizes: "100", reparse: "off", rates: "100%,50%,25%", repeat: 4, txs: 10000},
}

// presetNamesValidator lists the presets with their quick forms.
func presetNamesValidator() string {
	var out []string
	for _, n := range []string{"fig7a", "fig8a", "fig10", "idle"} {
		out = append(out, n, n+"-quick")
	}
	return strings.Join(out, ", ")
}

// applyPreset sets the flags of preset name ("fig7a", or "fig7a-quick"
// for a CI smoke: a tenth of the transactions and a short crypto bound).
func applyPreset(name string, f *validatorFlags) error {
	base, quick := strings.CutSuffix(name, "-quick")
	p, ok := validatorPresets[base]
	if !ok {
		return fmt.Errorf("--preset %q: want one of %s", name, presetNamesValidator())
	}
	if f.changed != nil {
		for _, fl := range presetFlags {
			if f.changed(fl) {
				return fmt.Errorf("--preset %s sets --%s: leave it out, or run without the preset", name, fl)
			}
		}
	}
	f.blockSizes, f.modes, f.reparse, f.rates = p.blockSizes, "sequential", p.reparse, p.rates
	f.workers = ""
	if p.workers == "all" {
		var ws []string
		for w := 1; w <= runtime.NumCPU(); w++ {
			ws = append(ws, strconv.Itoa(w))
		}
		f.workers = strings.Join(ws, ",")
	}
	f.txs, f.repeat = p.txs, max(p.repeat, 1)
	if quick {
		f.txs, f.repeat = p.txs/10, 1
		if f.changed == nil || !f.changed("crypto-time") {
			f.cryptoTime = 500 * time.Millisecond
		}
	}
	fmt.Fprintf(os.Stderr, "preset %s: %s; %d transactions per run\n", name, p.about, f.txs)
	return nil
}

func bindValidatorEnergy(fl *pflag.FlagSet, f *validatorFlags) {
	bindEnergy(fl, &f.energy)
	fl.StringVar(&f.preset, "preset", "", "reproduce an energy-study figure: "+presetNamesValidator()+" (sets the block sizes, mode, workers, reparse and rates)")
	fl.StringVar(&f.workers, "workers", "", "cores given to the peer (verify and apply workers, GOMAXPROCS; the model charges as many); a comma-separated list runs each; default all")
	fl.StringVar(&f.reparse, "reparse", "off", "off; on (decode each transaction again at every stage, as a peer without a block cache does); or both")
	fl.StringVar(&f.rates, "rate", "", "after the full-speed replay, replay the same chain at these rates: N% of the full-speed throughput or tx/s, comma-separated (e.g. 100%,50%,25%)")
	fl.IntVar(&f.repeat, "repeat", 1, "replay the --rate list this many times, interleaved, every other round in reverse order (100%,50%,25%,25%,50%,100%,...); the output then adds each rate's medians and how far apart they are")
	fl.IntVar(&f.txs, "txs", 10000, "workload transactions per run when --blocks is not set")
}

// validatorRun is one peer configuration of a validator run.
type validatorRun struct {
	workers int
	reparse bool
}

func (v validatorRun) label() string {
	s := ""
	if v.workers > 0 {
		s += fmt.Sprintf(", %d workers", v.workers)
	}
	if v.reparse {
		s += ", reparse"
	}
	return s
}

type validatorVariants struct {
	runs   []validatorRun
	rates  []bench.ReplayRate
	energy *bench.EnergySpec
}

// variants parses the energy flags into the runs they ask for.
func (f validatorFlags) variants() (validatorVariants, error) {
	var v validatorVariants
	cfg, err := f.energy.config()
	if err != nil {
		return v, err
	}
	chooseSource(&cfg, os.Stderr)
	v.energy = &bench.EnergySpec{Meter: cfg, Every: f.energy.every}
	workers := []int{0}
	if f.workers != "" {
		if workers, err = parseInts("--workers", f.workers); err != nil {
			return v, err
		}
	}
	var reparse []bool
	switch f.reparse {
	case "off":
		reparse = []bool{false}
	case "on":
		reparse = []bool{true}
	case "both":
		reparse = []bool{false, true}
	default:
		return v, fmt.Errorf("--reparse %q: want off, on or both", f.reparse)
	}
	for _, w := range workers {
		for _, r := range reparse {
			v.runs = append(v.runs, validatorRun{workers: w, reparse: r})
		}
	}
	if f.rates != "" {
		for _, s := range strings.Split(f.rates, ",") {
			r, err := bench.ParseReplayRate(s)
			if err != nil {
				return v, fmt.Errorf("--rate: %w", err)
			}
			if !r.IsMax() { // the first replay is always at full speed
				v.rates = append(v.rates, r)
			}
		}
	}
	if f.repeat < 1 || f.repeat > 100 {
		return v, fmt.Errorf("--repeat %d: want 1 to 100", f.repeat)
	}
	if f.repeat > 1 && len(v.rates) == 0 {
		return v, fmt.Errorf("--repeat %d: repeats the --rate list, and there is none", f.repeat)
	}
	v.rates = bench.RepeatRates(v.rates, f.repeat)
	if f.txs < 1 {
		return v, fmt.Errorf("--txs %d: want at least 1", f.txs)
	}
	return v, nil
}
