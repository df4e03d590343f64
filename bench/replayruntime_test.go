package bench

import (
	"os"
	"strconv"
	"testing"
)

// TestRunDelay: a schedstat line's wait field; this process's threads'
// sum where the kernel keeps schedstats.
func TestRunDelay(t *testing.T) {
	if d, err := parseSchedstat("12345678 4321 17\n"); err != nil || d != 4321 {
		t.Errorf("parseSchedstat: %d, %v; want 4321", d, err)
	}
	for _, bad := range []string{"", "1 2", "1 x 3"} {
		if _, err := parseSchedstat(bad); err == nil {
			t.Errorf("parseSchedstat(%q) succeeded", bad)
		}
	}
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/schedstat"); err != nil {
		t.Skipf("no schedstat here: %v", err)
	}
	if d, err := readRunDelay(); err != nil || d < 0 {
		t.Errorf("readRunDelay: %d, %v", d, err)
	}
}
