package isolation_test

import (
	"fmt"
	"time"

	"github.com/strand-ledger/strand/isolation"
)

// The controller's side of the loop: a sample per period in, changes out.
// The loop would Apply each batch of changes to an Actuator, and on
// shutdown Apply Stop's changes before Close.
func ExampleController() {
	c, err := isolation.New(isolation.Config{Threshold: 500, LatencyTarget: 200 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, s := range []isolation.Sample{
		{Throughput: 520, P99: 90 * time.Millisecond},  // alone
		{Throughput: 400, P99: 180 * time.Millisecond}, // a neighbour starts
		{Throughput: 510, P99: 120 * time.Millisecond}, // boosted, back above T
	} {
		changes, err := c.Observe(s, start.Add(time.Duration(i)*10*time.Second))
		if err != nil {
			panic(err)
		}
		for _, ch := range changes {
			fmt.Println(ch)
		}
	}
	for _, ch := range c.Stop() {
		fmt.Println(ch)
	}
	// Output:
	// orderer 1024→1843: throughput 400.0 tps < threshold 500.0 tps (deficit 0.200), k 4
	// peer 1024→1843: throughput 400.0 tps < threshold 500.0 tps (deficit 0.200), k 4
	// orderer 1843→1105: no interference: decaying toward 1024 after 10s (half-life 3s)
	// peer 1843→1105: no interference: decaying toward 1024 after 10s (half-life 3s)
	// orderer 1105→1024: controller stopping: back to default 1024
	// peer 1105→1024: controller stopping: back to default 1024
}
