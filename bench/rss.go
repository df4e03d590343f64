package bench

import (
	"bytes"
	"os"
	"strconv"
)

// resetPeakRSS resets the kernel's peak resident set size of this process
// (VmHWM), where the kernel allows it.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSSMiB returns VmHWM, the peak resident set size since the last
// reset, in MiB; 0 where /proc is not available.
func peakRSSMiB() float64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(status, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, err := strconv.ParseFloat(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 64)
			if err != nil {
				return 0
			}
			return kb / 1024
		}
	}
	return 0
}
