package main

import (
	"fmt"
	"os"
)

// exeEnv names the strand binary that strand starts as node processes,
// compute nodes, benchmark peers and hogs; unset, this binary. Set it to
// run the nodes of a network from another build (alternating an old and a
// new build under one load generator), or, in tests, from a build
// without -race.
const exeEnv = "STRAND_EXE"

// nodeExe returns the binary to start as strand's processes, saying what
// it is for when it cannot be found.
func nodeExe(purpose string) (string, error) {
	if exe := os.Getenv(exeEnv); exe != "" {
		if _, err := os.Stat(exe); err != nil {
			return "", fmt.Errorf("%s=%s, the binary to run %s: %w", exeEnv, exe, purpose, err)
		}
		return exe, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this executable to run %s: %w", purpose, err)
	}
	return exe, nil
}
