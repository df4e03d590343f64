package bench

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Host is the machine a round ran on, so that a figure can be traced to
// it as Build traces it to its code.
type Host struct {
	Name     string    `json:"name"`      // hostname
	OS       string    `json:"os"`        // GOOS/GOARCH
	Kernel   string    `json:"kernel"`    // uname release, "" where /proc lacks it
	CPUModel string    `json:"cpu_model"` // /proc/cpuinfo's model name, "" where absent
	Cores    int       `json:"cores"`     // GOMAXPROCS's view: the cores the run could use
	Started  time.Time `json:"started"`   // when the round began, UTC
}

// readHost describes this machine at start; fields it cannot read are "".
func readHost(start time.Time) Host {
	h := Host{OS: runtime.GOOS + "/" + runtime.GOARCH, Cores: runtime.GOMAXPROCS(0), Started: start.UTC().Truncate(time.Second)}
	h.Name, _ = os.Hostname()
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(raw))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return h
}

// String is one line: "host (linux/amd64, 2 cores, Intel ..., kernel 6.1)".
func (h Host) String() string {
	parts := []string{h.OS}
	if h.Cores > 0 {
		parts = append(parts, strconv.Itoa(h.Cores)+" cores")
	}
	if h.CPUModel != "" {
		parts = append(parts, h.CPUModel)
	}
	if h.Kernel != "" {
		parts = append(parts, "kernel "+h.Kernel)
	}
	return h.Name + " (" + strings.Join(parts, ", ") + ")"
}
