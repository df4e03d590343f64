package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// line is one series of a chart.
type line struct {
	name   string
	xs, ys []float64
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// Chart geometry, in SVG user units.
const (
	chartW, chartH         = 560.0, 260.0
	padL, padR, padT, padB = 60.0, 20.0, 40.0, 40.0 // padT: the title and two rows of legend
)

func esc(s string) string { return html.EscapeString(s) }

// niceMax rounds v up to 1, 2, 4 or 8 times a power of ten (or the next
// power), so that the quarter ticks of an axis are round numbers too.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 4, 8, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// frame opens an SVG with a title, axes, four y gridlines and axis labels.
func frame(b *strings.Builder, id, title, xlabel, ylabel string, xmax, ymax float64) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" id="%s" class="chart" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`, esc(id), chartW, chartH, chartW, chartH)
	fmt.Fprintf(b, `<text x="%.0f" y="18" class="title">%s</text>`, padL, esc(title))
	for i := 0; i <= 4; i++ {
		y := padT + (chartH-padT-padB)*float64(4-i)/4
		fmt.Fprintf(b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" class="grid"/>`, padL, y, chartW-padR, y)
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" class="tick" text-anchor="end">%s</text>`, padL-4, y+4, tick(ymax*float64(i)/4))
	}
	for i := 0; i <= 4 && xmax > 0; i++ {
		x := padL + (chartW-padL-padR)*float64(i)/4
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" class="tick" text-anchor="middle">%s</text>`, x, chartH-padB+14, tick(xmax*float64(i)/4))
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" class="axis" text-anchor="middle">%s</text>`, (chartW+padL)/2, chartH-6, esc(xlabel))
	fmt.Fprintf(b, `<text x="12" y="%.0f" class="axis" transform="rotate(-90 12 %.0f)" text-anchor="middle">%s</text>`, chartH/2, chartH/2, esc(ylabel))
}

func tick(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
	}
	return fmt.Sprintf("%.2g", v)
}

// legend writes the series' names in their colours, right of the title
// (whose width it estimates: about 7.5 px a character in the 13 px bold
// title face), wrapping to a second row where a name would run off the
// chart.
func legend(b *strings.Builder, title string, names []string) {
	start := padL + 7.5*float64(len(title)) + 16
	x, y := start, 8.0
	for i, n := range names {
		w := 20 + 7*float64(len(n))
		if x+w > chartW-padR && x > start {
			x, y = start, y+14
		}
		fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f" class="tick">%s</text>`,
			x, y, palette[i%len(palette)], x+13, y+9, esc(n))
		x += w
	}
}

// lineChart draws series as polylines on linear axes from 0, each
// rounded up to a nice maximum.
func lineChart(id, title, xlabel, ylabel string, ls []line) string {
	return drawLines(id, title, xlabel, ylabel, 0, ls)
}

// timeChart is a lineChart whose x axis is time and ends where the round
// did (seconds), not at a rounded-up maximum: a 10 s round is drawn over
// 0–10 s.
func timeChart(id, title, xlabel, ylabel string, seconds float64, ls []line) string {
	return drawLines(id, title, xlabel, ylabel, seconds, ls)
}

// bucketEnds places n one-second buckets of a round of elapsed seconds:
// each at its end (1, 2, ... and elapsed for a last partial one), with
// its width in seconds. A last bucket shorter than a tenth of a second
// is left out: its rate would be noise (12 ms drawn as a full second made
// every round seem to collapse at its end).
func bucketEnds(n int, elapsed float64) (xs, widths []float64) {
	for s := 0; s < n; s++ {
		end := min(float64(s+1), elapsed)
		w := end - float64(s)
		if w < 0.1 {
			if s == n-1 {
				break
			}
			w, end = 1, float64(s+1) // a bucket before the last is whole
		}
		xs, widths = append(xs, end), append(widths, w)
	}
	return xs, widths
}

// drawLines draws a line chart; xmax 0 means the data's maximum rounded
// up to a nice one.
func drawLines(id, title, xlabel, ylabel string, xmax float64, ls []line) string {
	var dataX, ymax float64
	for _, l := range ls {
		for i := range l.xs {
			dataX, ymax = max(dataX, l.xs[i]), max(ymax, l.ys[i])
		}
	}
	if xmax <= 0 {
		xmax = niceMax(dataX)
	}
	xmax = max(xmax, dataX)
	ymax = niceMax(ymax)
	var b strings.Builder
	frame(&b, id, title, xlabel, ylabel, xmax, ymax)
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.name
		pts := make([]string, len(l.xs))
		for j := range l.xs {
			x := padL + (chartW-padL-padR)*l.xs[j]/xmax
			y := chartH - padB - (chartH-padT-padB)*l.ys[j]/ymax
			pts[j] = fmt.Sprintf("%.1f,%.1f", x, y)
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, palette[i%len(palette)], strings.Join(pts, " "))
	}
	legend(&b, title, names)
	b.WriteString("</svg>")
	return b.String()
}

// barChart draws grouped bars: one group per category, one bar per series
// (ys[i] is the value of category i).
func barChart(id, title, ylabel string, categories []string, ls []line) string {
	var ymax float64
	for _, l := range ls {
		for _, y := range l.ys {
			ymax = max(ymax, y)
		}
	}
	ymax = niceMax(ymax)
	var b strings.Builder
	frame(&b, id, title, "", ylabel, 0, ymax)
	groupW := (chartW - padL - padR) / float64(max(len(categories), 1))
	barW := groupW * 0.8 / float64(max(len(ls), 1))
	names := make([]string, len(ls))
	for s, l := range ls {
		names[s] = l.name
		for c, y := range l.ys {
			h := (chartH - padT - padB) * y / ymax
			x := padL + groupW*float64(c) + groupW*0.1 + barW*float64(s)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`,
				x, chartH-padB-h, barW, h, palette[s%len(palette)], esc(categories[c]), esc(l.name), tick(y))
		}
	}
	for c, name := range categories {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="tick" text-anchor="middle">%s</text>`, padL+groupW*(float64(c)+0.5), chartH-padB+14, esc(name))
	}
	legend(&b, title, names)
	b.WriteString("</svg>")
	return b.String()
}
