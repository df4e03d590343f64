package bench

import (
	"encoding/json"
	"time"

	"github.com/strand-ledger/strand/internal/jsontime"
)

// The JSON forms of the harness's types hold durations as text ("2ms",
// the form rounds files take), not integer nanoseconds; they read either.
// Each type's MarshalJSON embeds the type without its methods and shadows
// its duration fields (the shallower field wins in encoding/json).
// Interference, embedded in Round, has none of its own: it would be
// promoted to Round; Round's shadow its HogsStop.

func (r Round) MarshalJSON() ([]byte, error) {
	type plain Round
	return json.Marshal(struct {
		plain
		Duration           jsontime.Duration `json:"duration"`
		BatchTimeout       jsontime.Duration `json:"batch_timeout,omitempty"`
		CheckpointInterval jsontime.Duration `json:"checkpoint_interval,omitempty"`
		HogsStop           jsontime.Duration `json:"hogs_stop,omitempty"`
	}{plain(r), jsontime.Duration(r.Duration), jsontime.Duration(r.BatchTimeout), jsontime.Duration(r.CheckpointInterval), jsontime.Duration(r.HogsStop)})
}

func (r *Round) UnmarshalJSON(b []byte) error {
	type plain Round
	v := struct {
		*plain
		Duration           jsontime.Duration `json:"duration"`
		BatchTimeout       jsontime.Duration `json:"batch_timeout,omitempty"`
		CheckpointInterval jsontime.Duration `json:"checkpoint_interval,omitempty"`
		HogsStop           jsontime.Duration `json:"hogs_stop,omitempty"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	r.Duration, r.BatchTimeout = time.Duration(v.Duration), time.Duration(v.BatchTimeout)
	r.CheckpointInterval, r.HogsStop = time.Duration(v.CheckpointInterval), time.Duration(v.HogsStop)
	return nil
}

func (c IsolationConfig) MarshalJSON() ([]byte, error) {
	type plain IsolationConfig
	return json.Marshal(struct {
		plain
		DelayTarget   jsontime.Duration `json:"delay_target,omitempty"`
		LatencyTarget jsontime.Duration `json:"latency_target,omitempty"`
		Period        jsontime.Duration `json:"period,omitempty"`
		Probe         jsontime.Duration `json:"probe,omitempty"`
	}{plain(c), jsontime.Duration(c.DelayTarget), jsontime.Duration(c.LatencyTarget), jsontime.Duration(c.Period), jsontime.Duration(c.Probe)})
}

func (c *IsolationConfig) UnmarshalJSON(b []byte) error {
	type plain IsolationConfig
	v := struct {
		*plain
		DelayTarget   jsontime.Duration `json:"delay_target,omitempty"`
		LatencyTarget jsontime.Duration `json:"latency_target,omitempty"`
		Period        jsontime.Duration `json:"period,omitempty"`
		Probe         jsontime.Duration `json:"probe,omitempty"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c.DelayTarget, c.LatencyTarget, c.Period = time.Duration(v.DelayTarget), time.Duration(v.LatencyTarget), time.Duration(v.Period)
	c.Probe = time.Duration(v.Probe)
	return nil
}

func (c ControllerResult) MarshalJSON() ([]byte, error) {
	type plain ControllerResult
	return json.Marshal(struct {
		plain
		DelayTarget jsontime.Duration `json:"delay_target"`
	}{plain(c), jsontime.Duration(c.DelayTarget)})
}

func (c *ControllerResult) UnmarshalJSON(b []byte) error {
	type plain ControllerResult
	v := struct {
		*plain
		DelayTarget jsontime.Duration `json:"delay_target"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c.DelayTarget = time.Duration(v.DelayTarget)
	return nil
}

func (e EnergySpec) MarshalJSON() ([]byte, error) {
	type plain EnergySpec
	return json.Marshal(struct {
		plain
		Every jsontime.Duration `json:"every"`
	}{plain(e), jsontime.Duration(e.Every)})
}

func (e *EnergySpec) UnmarshalJSON(b []byte) error {
	type plain EnergySpec
	v := struct {
		*plain
		Every jsontime.Duration `json:"every"`
	}{plain: (*plain)(e)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	e.Every = time.Duration(v.Every)
	return nil
}
