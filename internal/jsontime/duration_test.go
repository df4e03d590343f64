package jsontime

import (
	"encoding/json"
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	type s struct {
		D Duration `json:"d,omitempty"`
	}
	b, err := json.Marshal(s{Duration(2 * time.Millisecond)})
	if err != nil || string(b) != `{"d":"2ms"}` {
		t.Fatalf("marshal: %s %v", b, err)
	}
	if b, _ := json.Marshal(s{}); string(b) != `{}` {
		t.Errorf("zero with omitempty: %s", b)
	}
	for in, want := range map[string]time.Duration{`{"d":"1m30s"}`: 90 * time.Second, `{"d":2000000}`: 2 * time.Millisecond, `{"d":"0s"}`: 0} {
		var v s
		if err := json.Unmarshal([]byte(in), &v); err != nil || time.Duration(v.D) != want {
			t.Errorf("unmarshal %s = %v, %v; want %v", in, time.Duration(v.D), err, want)
		}
	}
	for _, in := range []string{`{"d":"fast"}`, `{"d":true}`, `{"d":1.5}`} {
		var v s
		if err := json.Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("unmarshal %s: no error", in)
		}
	}
}
