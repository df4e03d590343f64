package rate

import (
	"encoding/json"
	"time"

	"github.com/strand-ledger/strand/internal/jsontime"
)

// MarshalJSON writes StepTime as text ("5s"), as rounds files have it.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	return json.Marshal(struct {
		plain
		StepTime jsontime.Duration `json:"step_time,omitempty"`
	}{plain(c), jsontime.Duration(c.StepTime)})
}

// UnmarshalJSON reads StepTime as text or as integer nanoseconds.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	v := struct {
		*plain
		StepTime jsontime.Duration `json:"step_time,omitempty"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c.StepTime = time.Duration(v.StepTime)
	return nil
}
