package node

import (
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strand-ledger/strand/internal/latency"
	"github.com/strand-ledger/strand/internal/metricdoc"
)

// structCollector exports a component's plain Metrics snapshot (the
// convention of every strand component) to Prometheus at scrape time. It
// is strand's one metrics naming layer, so every exported metric follows
// Prometheus' conventions by construction:
//
//   - name: strand_<component>_<field in snake_case>; a nested struct adds
//     its field's name.
//   - type: the field's tag, `metric:"counter"` or `metric:"gauge"`; a
//     latency.Snapshot is a histogram. A counter's name ends in _total.
//   - unit: a time.Duration is in seconds, named _seconds (a counter
//     _seconds_total: a field FsyncTotal becomes fsync_seconds_total).
//   - HELP: the field's doc comment (internal/metricdoc, generated).
//   - outcomes as labels: `metric:"counter,family=refused,reason=expired"`
//     exports the field as the series {reason="expired"} of the family
//     strand_<component>_refused_total, whose HELP is the doc comment of
//     the family's first field (`family=` alone: the family is named after
//     the struct field that holds the struct); a map of numbers is one series per key,
//     labelled `key` or as `metric:"...,key=code"` names it.
//
// node's metrics test lints every node's whole /metrics output.
type structCollector struct {
	prefix   string
	snapshot func() any
}

// NewStructCollector returns a collector for the snapshots snapshot returns.
func NewStructCollector(component string, snapshot func() any) prometheus.Collector {
	return &structCollector{prefix: "strand_" + component, snapshot: snapshot}
}

// Describe sends no descriptors: the collector is unchecked, since its
// series follow the struct's fields.
func (c *structCollector) Describe(chan<- *prometheus.Desc) {}

func (c *structCollector) Collect(ch chan<- prometheus.Metric) {
	v := reflect.ValueOf(c.snapshot())
	c.collect(ch, c.prefix, v, field{help: "strand " + c.prefix})
}

var (
	durationType  = reflect.TypeOf(time.Duration(0))
	histogramType = reflect.TypeOf(latency.Snapshot{})
)

// field is how one struct field is exported: its parsed tag and HELP.
type field struct {
	kind   prometheus.ValueType // UntypedValue when the tag names none
	labels prometheus.Labels    // constant labels (a family's outcome)
	key    string               // the label of a map's keys
	help   string
}

// parseTag reads `metric:"KIND[,family=NAME][,key=LABEL][,LABEL=VALUE...]"`;
// family is "" when the tag names none.
func parseTag(tag string) (f field, family string) {
	f.kind, f.key = prometheus.UntypedValue, "key"
	parts := strings.Split(tag, ",")
	switch parts[0] {
	case "counter":
		f.kind = prometheus.CounterValue
	case "gauge":
		f.kind = prometheus.GaugeValue
	}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "family":
			family = v
			if v == "" {
				family = "." // the struct's own name: its fields are the series
			}
		case "key":
			f.key = v
		default:
			if f.labels == nil {
				f.labels = prometheus.Labels{}
			}
			f.labels[k] = v
		}
	}
	return f, family
}

// helpOf is the HELP of field i of struct type t: its doc comment.
func helpOf(t reflect.Type, name, metric string) string {
	if h, ok := metricdoc.Help(t, name); ok {
		return h
	}
	return fmt.Sprintf("%s (%s.%s.%s has no doc comment)", metric, t.PkgPath(), t.Name(), name)
}

func (c *structCollector) collect(ch chan<- prometheus.Metric, name string, v reflect.Value, f field) {
	if v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == durationType:
		emit(ch, metricName(name, true, f.kind), f.help, v.Interface().(time.Duration).Seconds(), f.labels, f.kind)
	case v.Type() == histogramType:
		emitHistogram(ch, name+"_seconds", f.help, v.Interface().(latency.Snapshot), f.labels)
	case v.Kind() == reflect.Struct:
		t := v.Type()
		familyHelp := map[string]string{} // a family's HELP: its first field's
		for i := 0; i < v.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("metric")
			if !sf.IsExported() || tag == "-" {
				continue
			}
			ff, family := parseTag(tag)
			sub := name + "_" + snake(sf.Name)
			if family != "" {
				sub = name + "_" + family
				if family == "." {
					sub = name
				}
				if _, ok := familyHelp[family]; !ok {
					familyHelp[family] = helpOf(t, sf.Name, sub)
				}
				ff.help = familyHelp[family]
			} else {
				ff.help = helpOf(t, sf.Name, sub)
			}
			c.collect(ch, sub, v.Field(i), ff)
		}
	case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
		for _, k := range v.MapKeys() {
			if x, ok := number(v.MapIndex(k)); ok {
				labels := prometheus.Labels{f.key: k.String()}
				for l, lv := range f.labels {
					labels[l] = lv
				}
				emit(ch, metricName(name, false, f.kind), f.help, x, labels, f.kind)
			}
		}
	default:
		if x, ok := number(v); ok {
			emit(ch, metricName(name, false, f.kind), f.help, x, f.labels, f.kind)
		}
	}
}

// metricName adds the unit and type suffixes to a field's base name: a
// duration's _seconds, a counter's _total (a trailing _total of the field
// name moves after the unit: fsync_total → fsync_seconds_total).
func metricName(base string, seconds bool, kind prometheus.ValueType) string {
	base = strings.TrimSuffix(base, "_total")
	if seconds && !strings.HasSuffix(base, "_seconds") {
		base += "_seconds"
	}
	if kind == prometheus.CounterValue {
		base += "_total"
	}
	return base
}

// emitHistogram exports a latency snapshot with cumulative buckets in
// seconds, as Prometheus wants them.
func emitHistogram(ch chan<- prometheus.Metric, name, help string, s latency.Snapshot, labels prometheus.Labels) {
	desc := prometheus.NewDesc(name, help, nil, labels)
	ch <- prometheus.MustNewConstHistogram(desc, s.Count, s.Sum.Seconds(), s.Cumulative())
}

func number(v reflect.Value) (float64, bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint()), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	case reflect.Bool:
		if v.Bool() {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func emit(ch chan<- prometheus.Metric, name, help string, x float64, labels prometheus.Labels, vt prometheus.ValueType) {
	desc := prometheus.NewDesc(name, help, nil, labels)
	ch <- prometheus.MustNewConstMetric(desc, vt, x)
}

// snake turns a Go field name into snake_case: AvgBlockTxs → avg_block_txs.
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
