// Package jsontime writes durations into JSON as people read them.
package jsontime

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration that JSON holds as Go's text for it ("2ms",
// "1m30s"), the form rounds files take, instead of integer nanoseconds.
// It reads either form, so files written before it still load.
type Duration time.Duration

// MarshalJSON writes d as a string such as "2ms".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want a number with a unit, such as 2ms, 10s or 1m30s", s)
		}
		*d = Duration(v)
		return nil
	}
	var ns int64
	if err := json.Unmarshal(b, &ns); err != nil {
		return fmt.Errorf("duration %s: want a string such as \"2ms\" or integer nanoseconds", b)
	}
	*d = Duration(ns)
	return nil
}
