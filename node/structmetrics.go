package node

import (
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strand-ledger/strand/internal/latency"
)

// structCollector exports a component's plain Metrics snapshot (the
// convention of every strand component) to Prometheus at scrape time:
// each exported numeric field becomes strand_<component>_<field in
// snake_case>, durations in seconds, nested structs add their field name,
// maps of numbers become one series per key (label "key"), and a
// latency.Snapshot becomes a histogram strand_<component>_<field>_seconds.
// A field tagged `metric:"gauge"` or `metric:"counter"` is exported with
// that type; others are untyped.
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
	c.collect(ch, c.prefix, reflect.ValueOf(c.snapshot()), prometheus.UntypedValue)
}

var (
	durationType  = reflect.TypeOf(time.Duration(0))
	histogramType = reflect.TypeOf(latency.Snapshot{})
)

// valueType maps a field's metric tag to the Prometheus type.
func valueType(f reflect.StructField) prometheus.ValueType {
	switch f.Tag.Get("metric") {
	case "gauge":
		return prometheus.GaugeValue
	case "counter":
		return prometheus.CounterValue
	}
	return prometheus.UntypedValue
}

func (c *structCollector) collect(ch chan<- prometheus.Metric, name string, v reflect.Value, vt prometheus.ValueType) {
	if v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == durationType:
		emit(ch, name+"_seconds", v.Interface().(time.Duration).Seconds(), nil, vt)
	case v.Type() == histogramType:
		emitHistogram(ch, name+"_seconds", v.Interface().(latency.Snapshot))
	case v.Kind() == reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() {
				c.collect(ch, name+"_"+snake(f.Name), v.Field(i), valueType(f))
			}
		}
	case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
		for _, k := range v.MapKeys() {
			if x, ok := number(v.MapIndex(k)); ok {
				emit(ch, name, x, prometheus.Labels{"key": k.String()}, vt)
			}
		}
	default:
		if x, ok := number(v); ok {
			emit(ch, name, x, nil, vt)
		}
	}
}

// emitHistogram exports a latency snapshot with cumulative buckets in
// seconds, as Prometheus wants them.
func emitHistogram(ch chan<- prometheus.Metric, name string, s latency.Snapshot) {
	desc := prometheus.NewDesc(name, "strand latency histogram "+name+" (see the component's Metrics type).", nil, nil)
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
	}
	return 0, false
}

func emit(ch chan<- prometheus.Metric, name string, x float64, labels prometheus.Labels, vt prometheus.ValueType) {
	desc := prometheus.NewDesc(name, "strand metric "+name+" (see the component's Metrics type).", nil, labels)
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
