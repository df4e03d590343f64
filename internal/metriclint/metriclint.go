// Package metriclint checks a /metrics page against Prometheus'
// conventions: promlint's rules (the ones `promtool check metrics` runs:
// counters end in _total, base units, snake_case, HELP present, ...) and
// strand's own on its strand_ families: every one typed (none untyped)
// and documented (no HELP of the naming layer's missing-comment form).
// Tests lint every node's whole output with it.
package metriclint

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Lint returns the problems of a page in the text exposition format, one
// line each ("<metric>: <problem>"), sorted; none means it is clean.
func Lint(page []byte) ([]string, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		return nil, fmt.Errorf("metriclint: the page does not parse: %w", err)
	}
	fams := make([]*dto.MetricFamily, 0, len(mfs))
	for _, mf := range mfs {
		fams = append(fams, mf)
	}
	sort.Slice(fams, func(i, j int) bool { return fams[i].GetName() < fams[j].GetName() })
	problems, err := promlint.NewWithMetricFamilies(fams).Lint()
	if err != nil {
		return nil, fmt.Errorf("metriclint: %w", err)
	}
	var out []string
	for _, p := range problems {
		out = append(out, p.Metric+": "+p.Text)
	}
	for _, mf := range fams {
		name := mf.GetName()
		if !strings.HasPrefix(name, "strand_") {
			continue
		}
		if mf.GetType() == dto.MetricType_UNTYPED {
			out = append(out, name+": untyped (tag its field `metric:\"counter\"` or `metric:\"gauge\"`)")
		}
		if strings.Contains(mf.GetHelp(), "has no doc comment") {
			out = append(out, name+": "+mf.GetHelp())
		}
	}
	sort.Strings(out)
	return out, nil
}
