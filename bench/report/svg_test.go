package report

import (
	"slices"
	"strings"
	"testing"
)

// TestBucketEnds: a round's one-second buckets end where the round did,
// a partial last one is a rate over its own width, and a sliver is left
// out rather than drawn as a full second of nothing.
func TestBucketEnds(t *testing.T) {
	for _, tc := range []struct {
		n          int
		elapsed    float64
		xs, widths []float64
	}{
		{11, 10.012, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{3, 2.5, []float64{1, 2, 2.5}, []float64{1, 1, 0.5}},
		{2, 2, []float64{1, 2}, []float64{1, 1}},
		{0, 0, nil, nil},
	} {
		xs, ws := bucketEnds(tc.n, tc.elapsed)
		if !slices.Equal(xs, tc.xs) || !slices.Equal(ws, tc.widths) {
			t.Errorf("bucketEnds(%d, %v) = %v, %v; want %v, %v", tc.n, tc.elapsed, xs, ws, tc.xs, tc.widths)
		}
	}
}

// TestTimeChartAxis: a 10 s round's time axis ends at 10, not at the
// next "nice" number (20), while other charts keep their rounded axes.
func TestTimeChartAxis(t *testing.T) {
	l := []line{{"x", []float64{1, 10}, []float64{5, 5}}}
	svg := timeChart("t", "t", "seconds", "y", 10.012, l)
	if !strings.Contains(svg, `text-anchor="middle">10</text>`) || strings.Contains(svg, `text-anchor="middle">20</text>`) {
		t.Errorf("time axis of a 10 s round:\n%s", svg)
	}
	if svg := lineChart("c", "c", "ms", "y", []line{{"x", []float64{1, 11}, []float64{5, 5}}}); !strings.Contains(svg, `text-anchor="middle">20</text>`) {
		t.Errorf("a value axis rounds up to a nice maximum:\n%s", svg)
	}
}
