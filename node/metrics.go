package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/strand-ledger/strand/committer"
	"github.com/strand-ledger/strand/internal/buildinfo"
	"github.com/strand-ledger/strand/internal/latency"
)

// committerCollector exports a committer's Metrics snapshot to Prometheus
// at scrape time: the committer keeps plain counters and knows nothing of
// Prometheus.
type committerCollector struct {
	c       *committer.Committer
	waits   *prometheus.Desc
	losses  *prometheus.Desc
	height  *prometheus.Desc
	signed  *prometheus.Desc
	blocks  *prometheus.Desc
	txs     *prometheus.Desc
	defs    *prometheus.Desc
	groups  *prometheus.Desc
	refused *prometheus.Desc
	stage   *prometheus.Desc
	queued  *prometheus.Desc
	overlay *prometheus.Desc
	busy    *prometheus.Desc
	anyBusy *prometheus.Desc
	// stage 1 on compute nodes (committer/remote.go)
	remoteTxs, remoteFailed, remotes *prometheus.Desc
}

// NewCommitterCollector returns a Prometheus collector for c.
func NewCommitterCollector(c *committer.Committer) prometheus.Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("strand_committer_"+name, help, labels, nil)
	}
	return &committerCollector{
		c:            c,
		height:       d("height", "Blocks durably committed."),
		signed:       d("signed_height", "The newest block with a verified orderer signature, plus one: blocks below it are covered by a signature (checkpoint channels sign only some)."),
		blocks:       d("blocks_total", "Blocks committed since start."),
		txs:          d("transactions_total", "Transactions committed since start, by validation code.", "code"),
		defs:         d("definitions_refused_total", "Contract definition transactions that did not take effect, by reason: signatures (the lifecycle policy is not met), sequence (a replay, downgrade or skip), code_hash, runtime, policy (the endorsement policy), malformed, other (refused before it was read as a definition).", "reason"),
		groups:       d("group_commits_total", "Group commits (block store fsyncs)."),
		refused:      d("refused_blocks_total", "Blocks refused whole (chain, data hash or orderer signature)."),
		stage:        d("stage_seconds", "Per-block time in each pipeline stage: verify (received → signatures checked), validate (→ MVCC and state update, including the wait for earlier blocks), commit (→ durable and announced, including the wait for its group).", "stage"),
		queued:       d("queued", "Work waiting in front of each stage.", "stage"),
		overlay:      d("overlay_keys", "Validated but not yet persisted keys held in memory."),
		waits:        d("state_waits_total", "Retries while the state database (a memory node) was unavailable: backpressure."),
		losses:       d("state_losses_total", "Times the state database (a memory node) had lost the blocks above its savepoint and they were re-applied."),
		busy:         d("busy_seconds_total", "Wall time each stage spent working (receive: Deliver's decode and chain checks per block; verify: per block, first job to last; validate: per block; persist: per group), its overlapping intervals counted once and queueing not counted. rate() of it is the stage's utilisation; the energy bench excludes the rest as idle.", "stage"),
		remoteTxs:    d("remote_verified_transactions_total", "Transactions whose signatures a compute node checked for stage 1 (compute.verify: compute); the peer checked the signatures it did not."),
		remoteFailed: d("remote_verify_failures_total", "Requests to a compute node to check signatures that failed or timed out; their transactions were checked here."),
		remotes:      d("remote_verifiers", "Compute nodes stage 1 asks to check signatures now."),
		anyBusy:      d("pipeline_busy_seconds_total", "Wall time at least one stage was working: the union of busy_seconds_total's intervals over all stages (their sum counts a block verified while the one before it is persisted twice). The peer's busy periods, over which bench run charges busy-period energy."),
	}
}

func (cc *committerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cc.height, cc.signed, cc.blocks, cc.txs, cc.defs, cc.groups, cc.refused, cc.stage, cc.queued, cc.overlay, cc.waits, cc.losses, cc.busy, cc.anyBusy, cc.remoteTxs, cc.remoteFailed, cc.remotes} {
		ch <- d
	}
}

func (cc *committerCollector) Collect(ch chan<- prometheus.Metric) {
	m := cc.c.Metrics()
	ch <- prometheus.MustNewConstMetric(cc.height, prometheus.GaugeValue, float64(m.Height))
	ch <- prometheus.MustNewConstMetric(cc.signed, prometheus.GaugeValue, float64(m.Signed))
	ch <- prometheus.MustNewConstMetric(cc.blocks, prometheus.CounterValue, float64(m.Blocks))
	for code, n := range m.ByCode {
		ch <- prometheus.MustNewConstMetric(cc.txs, prometheus.CounterValue, float64(n), code)
	}
	for why, n := range m.DefinitionsRefused {
		ch <- prometheus.MustNewConstMetric(cc.defs, prometheus.CounterValue, float64(n), why)
	}
	ch <- prometheus.MustNewConstMetric(cc.groups, prometheus.CounterValue, float64(m.Groups))
	ch <- prometheus.MustNewConstMetric(cc.refused, prometheus.CounterValue, float64(m.Refused))
	for stage, h := range map[string]latency.Snapshot{"verify": m.VerifyLatency, "validate": m.ValidateLatency, "commit": m.CommitLatency} {
		ch <- prometheus.MustNewConstHistogram(cc.stage, h.Count, h.Sum.Seconds(), h.Cumulative(), stage)
	}
	for stage, n := range map[string]int{"verify": m.QueuedVerify, "validate": m.QueuedValidate, "persist": m.QueuedPersist} {
		ch <- prometheus.MustNewConstMetric(cc.queued, prometheus.GaugeValue, float64(n), stage)
	}
	ch <- prometheus.MustNewConstMetric(cc.overlay, prometheus.GaugeValue, float64(m.OverlayKeys))
	ch <- prometheus.MustNewConstMetric(cc.waits, prometheus.CounterValue, float64(m.StateWaits))
	ch <- prometheus.MustNewConstMetric(cc.losses, prometheus.CounterValue, float64(m.StateLosses))
	for s, d := range m.Busy {
		ch <- prometheus.MustNewConstMetric(cc.busy, prometheus.CounterValue, d.Seconds(), committer.Stage(s).String())
	}
	ch <- prometheus.MustNewConstMetric(cc.anyBusy, prometheus.CounterValue, m.PipelineBusy.Seconds())
	ch <- prometheus.MustNewConstMetric(cc.remoteTxs, prometheus.CounterValue, float64(m.RemoteTxs))
	ch <- prometheus.MustNewConstMetric(cc.remoteFailed, prometheus.CounterValue, float64(m.RemoteFailed))
	ch <- prometheus.MustNewConstMetric(cc.remotes, prometheus.GaugeValue, float64(m.Remotes))
}

// buildInfoGauge is strand_build_info: 1, labelled with the build.
func buildInfoGauge(in buildinfo.Info) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "strand_build_info",
		Help: "Always 1; its labels name the running build (commit_time is the commit's, build_time a release build's, else unknown).",
		ConstLabels: prometheus.Labels{"version": in.Version, "commit": in.Commit, "modified": strconv.FormatBool(in.Modified),
			"commit_time": in.CommitTime, "go_version": in.GoVersion, "build_time": in.BuildTime},
	})
	g.Set(1)
	return g
}

// metricsServer serves /metrics over HTTP.
type metricsServer struct {
	srv  *http.Server
	addr string
}

// startMetrics serves the Go runtime, process, build and the given
// collectors on addr, /healthz, /readyz (ready's answer) and an index at
// /, and Go's profiles too when profile is set; an empty addr serves
// nothing. name is the node's, for the index.
func startMetrics(addr string, profile bool, name string, ready func(context.Context) error, log *slog.Logger, cs ...prometheus.Collector) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfoGauge(buildinfo.Read()))
	for _, c := range cs {
		reg.MustRegister(c)
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("node: metrics listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", healthzHandler)
	mux.Handle("/readyz", readyzHandler(ready))
	mux.Handle("/", indexHandler(name, endpoints(profile)))
	if profile {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	m := &metricsServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, addr: lis.Addr().String()}
	go func() {
		if err := m.srv.Serve(lis); err != nil && err != http.ErrServerClosed {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	return m, nil
}

func (m *metricsServer) Close() error {
	if m == nil {
		return nil
	}
	return m.srv.Close()
}

// Addr returns the address /metrics is served on, "" if none.
func (m *metricsServer) Addr() string {
	if m == nil {
		return ""
	}
	return m.addr
}
