package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/strand-ledger/strand/identity"
	"github.com/strand-ledger/strand/isolation"
	"github.com/strand-ledger/strand/localnet"
	"github.com/strand-ledger/strand/node"
)

// isolateFlags are `strand isolate`'s flags.
type isolateFlags struct {
	dir         string
	k           float64
	threshold   float64
	calibration time.Duration
	latency     time.Duration
	delay       time.Duration
	period      time.Duration
	probe       time.Duration
	parent      string
	metrics     string
	prefix      string // of the flags' names
}

func isolateCmd() *cobra.Command {
	var f isolateFlags
	cmd := &cobra.Command{
		Use:   "isolate",
		Short: "Keep a running network's throughput and latency under CPU interference by raising its nodes' CPU shares (QiOi)",
		Long: `Attaches the QiOi controller to the running network in --net: moves
every running orderer into the cgroup "orderer" and every running peer into
"peer" (under --cgroup-parent, in a subtree strand-PID of this process),
then once per --period reads each peer's /metrics (committed transactions
and the gateway's commit latency) and each node's scheduler counters, and
raises both cgroups' CPU shares while the nodes wait on a run queue longer
than --delay-target on average before each time slice, and, while they do, throughput is
below --threshold or the p99 above --latency. It logs
every change with its reason. On SIGINT or SIGTERM it returns the shares
to the default, moves the nodes back and removes its cgroups; the nodes
keep running. If it is killed instead, the next run removes the leftover
cgroups. Needs root, or a delegated cgroup.

With --threshold 0 the controller learns the threshold over the first
--calibration of load: run it with no neighbour competing for the CPU then.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runIsolate(ctx, cmd, f)
		},
	}
	cmd.Flags().StringVar(&f.dir, "net", defaultNetDir, "the running network's directory (as given to `strand net up --dir`)")
	f.bind(cmd, "")
	return cmd
}

// bind binds the controller's flags, each name prefixed with prefix
// (`net up --isolation` uses "isolation-").
func (f *isolateFlags) bind(cmd *cobra.Command, prefix string) {
	f.prefix = prefix
	fl := cmd.Flags()
	fl.Float64Var(&f.k, prefix+"k", isolation.DefaultK, "gain of orderers and peers: under interference e their share is 1024·(1+k·e)")
	fl.Float64Var(&f.threshold, prefix+"threshold", 0, "throughput objective in committed transactions per second (0 learns it during calibration)")
	fl.DurationVar(&f.calibration, prefix+"calibration", isolation.DefaultCalibration, "how long to watch the load before learning the threshold, when the threshold is 0")
	fl.DurationVar(&f.latency, prefix+"latency", 0, "p99 commit latency objective (0: none)")
	fl.DurationVar(&f.delay, prefix+"delay-target", isolation.DefaultDelayTarget, "the nodes' mean run-queue wait per time slice above which they suffer interference; below it a throughput or latency miss is not acted on (0: none, QiOi's throughput rule alone)")
	fl.DurationVar(&f.period, prefix+"period", isolation.DefaultPeriod, "measurement period")
	fl.DurationVar(&f.probe, prefix+"probe", 0, "between periods, read the nodes' scheduler counters this often and raise the shares at once when the delay is above twice the target (0: no probes; the qioi preset uses 100ms)")
	fl.StringVar(&f.parent, prefix+"cgroup-parent", "", "cgroup directory to make this run's cgroups in (default: the first usable of "+fmt.Sprint(isolation.DefaultParents)+")")
	fl.StringVar(&f.metrics, prefix+"metrics", "", "host:port to serve the controller's Prometheus /metrics on (empty: none)")
}

// config checks the flags, before any cgroup or network is touched, and
// returns the controller's configuration.
func (f *isolateFlags) config() (isolation.Config, error) {
	if f.period <= 0 {
		return isolation.Config{}, fmt.Errorf("--%speriod is %s, want > 0", f.prefix, f.period)
	}
	if f.probe < 0 || f.probe >= f.period {
		return isolation.Config{}, fmt.Errorf("--%sprobe is %s, want 0 (no probes) or more than 0 and less than --%speriod (%s)", f.prefix, f.probe, f.prefix, f.period)
	}
	if f.probe > 0 && f.delay == 0 {
		return isolation.Config{}, fmt.Errorf("--%sprobe is %s, want it only with a --%sdelay-target (a probe reads the delay alone)", f.prefix, f.probe, f.prefix)
	}
	comps := []isolation.Component{{Name: "orderer", K: f.k}, {Name: "peer", K: f.k}}
	cfg := isolation.Config{Components: comps, Threshold: f.threshold, LatencyTarget: f.latency, DelayTarget: f.delay, Calibration: f.calibration}
	if _, err := isolation.New(cfg); err != nil {
		return cfg, fmt.Errorf("%[1]w (flags --%[2]sk, --%[2]sthreshold, --%[2]slatency, --%[2]sdelay-target, --%[2]scalibration)", err, f.prefix)
	}
	return cfg, nil
}

func runIsolate(ctx context.Context, cmd *cobra.Command, f isolateFlags) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	lay, err := loadNet(f.dir)
	if err != nil {
		return err
	}
	targets, err := isolateTargets(lay)
	if err != nil {
		return err
	}
	act, err := isolation.Open(isolation.ActuatorOptions{Parent: f.parent, Components: []string{"orderer", "peer"}})
	if err != nil {
		return fmt.Errorf("%w (run as root, or pass --cgroup-parent a cgroup delegated to you)", err)
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	for _, d := range act.Leftovers() {
		log.Info("isolation: removed the cgroups of a run that died without cleaning up", "cgroup", d)
	}
	loop, err := isolation.NewLoop(isolation.LoopConfig{Controller: cfg, Targets: targets, Period: f.period, Probe: f.probe, Log: log}, act)
	if err != nil {
		return errors.Join(err, act.Close())
	}
	if f.metrics != "" {
		srv, err := serveIsolationMetrics(f.metrics, loop)
		if err != nil {
			return errors.Join(err, act.Close())
		}
		defer srv.Close()
		log.Info("isolation: serving metrics", "addr", "http://"+f.metrics+"/metrics")
	}
	fmt.Fprintf(cmd.OutOrStdout(), "isolating %d node(s) of %s in %s (cgroup %s); Ctrl-C restores them\n",
		len(targets), lay.Dir, act.Dir(), act.Hierarchy())
	err = loop.Run(ctx)
	fmt.Fprintf(cmd.OutOrStdout(), "stopped: %s\n", loop.Metrics())
	return err
}

// isolateTargets lists the network's running nodes: orderers to the
// "orderer" cgroup, peers to "peer" and measured at their metrics address,
// memory and compute nodes to "peer" (unmeasured).
// Nodes that do not run are left out; none running is an error.
func isolateTargets(lay *localnet.Layout) ([]isolation.Target, error) {
	var out []isolation.Target
	var down []string
	for _, p := range localnet.Status(lay) {
		if !p.Alive {
			down = append(down, p.Name)
			continue
		}
		t := isolation.Target{Name: p.Name, Component: "orderer", PID: p.PID}
		switch {
		case p.Role == identity.RolePeer:
			t.Component, t.Metrics = "peer", p.Metrics
		case p.Kind() == localnet.MemnodeKind, p.Kind() == localnet.ComputeKind: // the state tier and endorsers of a disaggregated peer
			t.Component = "peer"
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no node of the network in %s runs (%d down): start it with `strand net up%s`", lay.Dir, len(down), dirFlag(lay.Dir))
	}
	for _, t := range out {
		if t.Metrics != "" {
			return out, nil
		}
	}
	return nil, fmt.Errorf("no running peer of the network in %s serves metrics (down: %v): the controller measures peers", lay.Dir, down)
}

// serveIsolationMetrics serves the loop's LoopMetrics as
// strand_isolation_* on addr.
func serveIsolationMetrics(addr string, loop *isolation.Loop) (*http.Server, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(node.NewStructCollector("isolation", func() any { return loop.Metrics() }))
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(lis)
	return srv, nil
}
