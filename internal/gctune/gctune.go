// Package gctune sets the Go garbage collector for strand's processes.
//
// strand allocates mostly short-lived buffers (messages, blocks, read and
// write sets) over a small live heap, so with Go's default GOGC=100 it
// collects often for little gain. At GOGC=300 a `net up` network under
// Smallbank load used about 15% less CPU per transaction (1,658 → 1,400
// µs, two runs each, `strand demo --net`), and a peer's peak resident
// memory grew from 52 to 66 MiB. A memory limit, when set, makes the
// collector work harder as the heap nears it, whatever the percentage.
//
// The percentage multiplies whatever a process keeps live, and a state
// database that keeps its buffers in the Go heap makes that expensive:
// BadgerDB allocates each memtable's arena (about 1.3x its MemTableSize)
// and its block cache with make, so at GOGC=300 two Badger peers' heaps
// grow by several hundred MiB more than two LevelDB peers'. A Badger node
// therefore defaults to BadgerPercent (see node's GC config).
package gctune

import (
	"os"
	"runtime/debug"
)

// DefaultMemoryLimitMB is a node's default soft memory limit
// (GOMEMLIMIT), in MiB. The percentage lets the heap grow to four times
// what is live between collections; that is cheap while little is live,
// but a burst of garbage (refused messages, a spike of large blocks) on
// top of a large live heap (a Badger peer's memtables and cache, near 1
// GiB in the state-DB study) would otherwise grow the process to four
// times that. Near this limit the collector runs as often as it must,
// whatever the percentage. It is soft: a node whose live heap needs more
// gets it, at the cost of collecting often (Go caps that at about half of
// its CPU). 2 GiB sits above every peak the state-DB study measured.
const DefaultMemoryLimitMB = 2048

// DefaultPercent is strand's GOGC.
const DefaultPercent = 300

// BadgerPercent is the GOGC of a node whose state database is BadgerDB.
// With it, the 64 KB creates of the state-DB study peaked at 836 and 891
// MiB against LevelDB's 724 and 806 (1.1x), against 1,127 and 1,158 MiB
// at DefaultPercent (1.4x to 1.6x), with no measurable change in
// throughput or CPU (docs/statedb.md, "Badger's memory").
const BadgerPercent = 100

// Apply sets the collector's percentage (GOGC) and, when limitMB > 0, a
// soft memory limit, unless the environment sets GOGC or GOMEMLIMIT, which
// win. It returns what it set, for the log.
func Apply(percent, limitMB int) (setPercent, setLimit bool) {
	if os.Getenv("GOGC") == "" && percent != 0 {
		debug.SetGCPercent(percent)
		setPercent = true
	}
	if os.Getenv("GOMEMLIMIT") == "" && limitMB > 0 {
		debug.SetMemoryLimit(int64(limitMB) << 20)
		setLimit = true
	}
	return setPercent, setLimit
}
