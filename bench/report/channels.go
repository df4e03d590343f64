package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/strand-ledger/strand/bench"
)

// A round that drives several channels (bench.Round.Channels) carries
// each channel's figures in Result.Channels; its own are the aggregate.
// The table then gets one more table, a line per channel; the CSV a row
// per channel after the round's (its channel column names it, the
// round's row leaves it empty); the HTML page a per-channel table and
// charts; Compare a figure per channel.

// channelOf is channel c of round r as a Result of its own, so that the
// table's and CSV's columns read it: its figures, workload and clients;
// what was measured per process or machine (CPU, memory, energy) belongs
// to the round and stays empty.
func channelOf(r *bench.Result, c bench.ChannelResult) *bench.Result {
	rd := r.Round
	rd.Clients = c.Clients
	return &bench.Result{Label: r.Label, Workload: c.Workload, Params: c.Params, Round: rd, Rate: r.Rate, Network: r.Network,
		Build: r.Build, Host: r.Host, ElapsedS: r.ElapsedS, SendTPS: c.SendTPS, ThroughputTPS: c.ThroughputTPS, GoodputTPS: c.GoodputTPS,
		EvaluateTPS: c.EvaluateTPS, Blocks: c.Blocks, Result: c.Result, Checks: c.Checks, Failures: c.Failures}
}

// channelColumns are the per-channel table's columns (by CSV name).
var channelColumns = []string{"workload", "clients", "succeeded", "failed", "send_tps", "throughput_tps", "goodput_tps", "evaluate_tps",
	"latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "conflicts", "errors", "checks"}

func columnNamed(csvName string) column {
	i := slices.IndexFunc(columns, func(c column) bool { return c.csv == csvName })
	return columns[i]
}

// writeChannelsTable writes a line per channel of every round with
// several, then the aggregate's share of each channel.
func writeChannelsTable(w io.Writer, rs []*bench.Result) {
	if !slices.ContainsFunc(rs, func(r *bench.Result) bool { return len(r.Channels) > 0 }) {
		return
	}
	fmt.Fprintln(w, "\nper channel (the rounds' lines above are the aggregate):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "round\tchannel\t")
	for _, n := range channelColumns {
		fmt.Fprint(tw, columnNamed(n).name+"\t")
	}
	fmt.Fprintln(tw, "share of throughput\t")
	for _, r := range rs {
		for _, c := range r.Channels {
			fmt.Fprintf(tw, "%s\t%s\t", r.Label, c.Channel)
			cr := channelOf(r, c)
			for _, n := range channelColumns {
				fmt.Fprint(tw, columnNamed(n).get(cr)+"\t")
			}
			share := "-"
			if r.ThroughputTPS > 0 {
				share = strconv.FormatFloat(100*c.ThroughputTPS/r.ThroughputTPS, 'f', 0, 64) + "%"
			}
			fmt.Fprintln(tw, share+"\t")
		}
	}
	tw.Flush()
}

// writeChannelCodes writes, in a round's section, each channel's codes
// and errors.
func writeChannelCodes(w io.Writer, r *bench.Result) {
	for _, c := range r.Channels {
		var parts []string
		for _, code := range c.Codes() {
			parts = append(parts, fmt.Sprintf("%s %d", code, c.ByCode[code]))
		}
		for _, e := range sortedKeys(c.ByError) {
			parts = append(parts, fmt.Sprintf("not committed: %s %d", e, c.ByError[e]))
		}
		fmt.Fprintf(w, "  channel %s (%s, %s): %s\n", c.Channel, c.Workload, paramString(c.Params), strings.Join(parts, ", "))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// channelsHTML writes a round's per-channel table and charts: throughput
// and p50/p99 latency per channel, and committed transactions per second
// over time per channel.
func channelsHTML(b *strings.Builder, i int, r *bench.Result) {
	if len(r.Channels) == 0 {
		return
	}
	b.WriteString("<table><tr><th>channel</th>")
	for _, n := range channelColumns {
		fmt.Fprintf(b, "<th>%s</th>", esc(columnNamed(n).name))
	}
	b.WriteString("</tr>")
	var names []string
	var tput, good, p50, p99 []float64
	var overTime []line
	for _, c := range r.Channels {
		cr := channelOf(r, c)
		fmt.Fprintf(b, `<tr><td class="l">%s</td>`, esc(c.Channel))
		for k, n := range channelColumns {
			cls := ""
			if k == 0 {
				cls = ` class="l"`
			}
			fmt.Fprintf(b, "<td%s>%s</td>", cls, esc(columnNamed(n).get(cr)))
		}
		b.WriteString("</tr>")
		names = append(names, c.Channel+" ("+c.Workload+")")
		tput, good = append(tput, c.ThroughputTPS), append(good, c.GoodputTPS)
		p50, p99 = append(p50, latency(cr).P50), append(p99, latency(cr).P99)
		xs, widths := bucketEnds(len(c.Series), r.ElapsedS)
		var ys []float64
		for s, bk := range c.Series[:len(xs)] {
			ys = append(ys, float64(bk.Committed)/widths[s])
		}
		overTime = append(overTime, line{c.Channel, xs, ys})
	}
	fmt.Fprintf(b, `<tr><td class="l">all (aggregate)</td><td class="l">%s</td>`, esc(r.Workload))
	for _, n := range channelColumns[1:] {
		fmt.Fprintf(b, "<td>%s</td>", esc(columnNamed(n).get(r)))
	}
	b.WriteString("</tr></table>")
	b.WriteString(barChart(fmt.Sprintf("channels-tput-%d", i), "throughput by channel", "transactions per second", names,
		[]line{{"committed", nil, tput}, {"VALID", nil, good}}))
	b.WriteString(barChart(fmt.Sprintf("channels-lat-%d", i), "latency by channel", "milliseconds", names,
		[]line{{"p50", nil, p50}, {"p99", nil, p99}}))
	b.WriteString(timeChart(fmt.Sprintf("channels-time-%d", i), "committed by channel", "seconds into the round", "transactions per second", r.ElapsedS, overTime))
}

// compareChannels writes, for two rounds matched by Compare, each
// channel's throughput and latency, matched by channel id.
func compareChannels(tw io.Writer, label string, a, b *bench.Result) {
	byID := map[string]bench.ChannelResult{}
	for _, c := range b.Channels {
		byID[c.Channel] = c
	}
	for _, ca := range a.Channels {
		cb, ok := byID[ca.Channel]
		if !ok {
			fmt.Fprintf(tw, "%s\t[%s] (not in B)\t\t\t\t\n", label, ca.Channel)
			continue
		}
		ra, rb := channelOf(a, ca), channelOf(b, cb)
		for _, m := range []struct {
			name string
			get  func(*bench.Result) float64
		}{
			{"throughput tx/s", func(r *bench.Result) float64 { return r.ThroughputTPS }},
			{"goodput tx/s", func(r *bench.Result) float64 { return r.GoodputTPS }},
			{"p50 ms", func(r *bench.Result) float64 { return latency(r).P50 }},
			{"p99 ms", func(r *bench.Result) float64 { return latency(r).P99 }},
		} {
			va, vb := m.get(ra), m.get(rb)
			ratio := "-"
			if va != 0 {
				ratio = fmt.Sprintf("%.2f", vb/va)
			}
			fmt.Fprintf(tw, "%s\t[%s] %s\t%.1f\t%.1f\t%s\t\n", label, ca.Channel, m.name, va, vb, ratio)
		}
	}
}

// channelCount is the channels a round drove (1 for one).
func channelCount(r *bench.Result) string {
	return strconv.Itoa(max(len(r.Channels), 1))
}
