package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/strand-ledger/strand/bench/rate"
)

// TestRoundJSONDurations: a result's config holds durations as text, the
// rounds file's form, and reads back both that and the integer
// nanoseconds of results written before.
func TestRoundJSONDurations(t *testing.T) {
	r := Round{Label: "a", Workload: "smallbank", Duration: 10 * time.Second, BatchTimeout: 2 * time.Millisecond,
		Rate:         rate.Config{Kind: "maximum-rate", StepTime: 5 * time.Second},
		Interference: Interference{HogsStop: 3 * time.Second, Isolation: &IsolationConfig{K: 4, Period: time.Second, Probe: 100 * time.Millisecond}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"duration":"10s"`, `"batch_timeout":"2ms"`, `"step_time":"5s"`, `"hogs_stop":"3s"`, `"period":"1s"`, `"probe":"100ms"`, `"label":"a"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
	if strings.Contains(string(b), "checkpoint_interval") || strings.Contains(string(b), "latency_target") {
		t.Errorf("zero durations not left out: %s", b)
	}
	var back Round
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Duration != r.Duration || back.BatchTimeout != r.BatchTimeout || back.Rate.StepTime != r.Rate.StepTime ||
		back.HogsStop != r.HogsStop || back.Isolation == nil || back.Isolation.Period != time.Second || back.Isolation.Probe != 100*time.Millisecond || back.Label != "a" {
		t.Errorf("round trip: %+v", back)
	}
	var old Round
	if err := json.Unmarshal([]byte(`{"label":"b","duration":1000000000,"batch_timeout":2000000}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.Duration != time.Second || old.BatchTimeout != 2*time.Millisecond || old.Label != "b" {
		t.Errorf("old form: %+v", old)
	}
}
