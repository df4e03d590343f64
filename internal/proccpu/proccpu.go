// Package proccpu reads how much CPU time a process has used: another
// process's from /proc/PID/stat, this one's from getrusage. bench reports
// it per process; energy's model meter turns it into joules.
package proccpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ClockTick is the unit of /proc/PID/stat's times: USER_HZ, which Linux
// fixes at 100 on every architecture strand runs on. A reading is exact
// only to this.
const ClockTick = 10 * time.Millisecond

// Process returns the CPU time, user and system, that process pid has
// used, read from /proc/PID/stat (ClockTick resolution).
func Process(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("proccpu: CPU time of process %d: %w", pid, err)
	}
	return ParseStat(pid, raw)
}

// ParseStat returns utime+stime from the contents of /proc/PID/stat.
func ParseStat(pid int, raw []byte) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, the 12th and 13th after it.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("proccpu: /proc/%d/stat: no command name in %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("proccpu: /proc/%d/stat: %d fields after the command name, want at least 13", pid, len(f))
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proccpu: /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * ClockTick, nil
}

// Self returns the CPU time, user and system, this process has used.
func Self() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("proccpu: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
