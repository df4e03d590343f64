// Package buildinfo says which build of strand is running: its version,
// the commit it was built from, the Go toolchain and, where the builder
// recorded one, the build time. `strand version` prints it, every node
// logs it first and exports it as the strand_build_info gauge, and
// benchmark results carry it, so that a number can be traced to its code.
//
// Everything comes from runtime/debug.ReadBuildInfo: `go build` in a git
// checkout stamps vcs.revision, vcs.time (the commit's time, not the
// build's) and vcs.modified, unless -buildvcs=false (a GOFLAGS default
// on some machines) or the checkout is a git worktree, which Go does not
// stamp. Go records no build time. So a build may set both at link time:
//
//	go build -ldflags "-X github.com/strand-ledger/strand/internal/buildinfo.BuildTime=$(date -u +%FT%TZ)
//	  -X github.com/strand-ledger/strand/internal/buildinfo.Commit=$(git rev-parse HEAD)" ./cmd/strand
//
// Commit is used only when Go stamped no revision. Test binaries and `go
// run` carry neither: their commit is "unknown".
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// BuildTime, Commit and CommitTime are set at link time (-ldflags -X), if
// at all. Commit may end in "+dirty" (the checkout had changes).
var BuildTime, Commit, CommitTime string

// Info identifies a build. Fields that are not known are "unknown" (a
// string field) or false, never empty, so that they print and label.
type Info struct {
	Version    string `json:"version"`     // the module version, "devel" for a build from a checkout
	Commit     string `json:"commit"`      // the full git revision
	CommitTime string `json:"commit_time"` // the commit's time, RFC 3339
	Modified   bool   `json:"modified"`    // the checkout had uncommitted changes
	GoVersion  string `json:"go_version"`
	BuildTime  string `json:"build_time"` // BuildTime, or "unknown"
}

const unknown = "unknown"

// Read returns this binary's build information.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	in := fromBuild(bi, runtime.Version(), BuildTime)
	if in.Commit == unknown && Commit != "" {
		c, dirty := strings.CutSuffix(Commit, "+dirty")
		in.Commit, in.Modified = c, dirty
		if CommitTime != "" {
			in.CommitTime = CommitTime
		}
	}
	return in
}

// fromBuild turns a build's recorded settings into an Info; bi may be nil.
func fromBuild(bi *debug.BuildInfo, goVersion, buildTime string) Info {
	in := Info{Version: unknown, Commit: unknown, CommitTime: unknown, GoVersion: goVersion, BuildTime: orUnknown(buildTime)}
	if bi == nil {
		return in
	}
	if bi.GoVersion != "" {
		in.GoVersion = bi.GoVersion
	}
	switch v := bi.Main.Version; v {
	case "", "(devel)":
		in.Version = "devel"
	default:
		in.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = orUnknown(s.Value)
		case "vcs.time":
			in.CommitTime = orUnknown(s.Value)
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

func orUnknown(s string) string {
	if s == "" {
		return unknown
	}
	return s
}

// ShortCommit is the first 12 hex digits of the commit, with "+dirty" when
// the checkout was modified.
func (in Info) ShortCommit() string {
	c := in.Commit
	if len(c) > 12 && c != unknown {
		c = c[:12]
	}
	if in.Modified {
		c += "+dirty"
	}
	return c
}

// String is one line: "strand devel commit 1a2b3c4d5e6f+dirty (2026-11-24T21:00:00Z) go1.26.8".
func (in Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "strand %s commit %s", in.Version, in.ShortCommit())
	if in.CommitTime != unknown {
		fmt.Fprintf(&b, " (%s)", in.CommitTime)
	}
	b.WriteString(" " + in.GoVersion)
	if in.BuildTime != unknown {
		b.WriteString(" built " + in.BuildTime)
	}
	return b.String()
}

// LogAttrs are the fields a node's first log line carries.
func (in Info) LogAttrs() []any {
	return []any{"version", in.Version, "commit", in.ShortCommit(), "commit_time", in.CommitTime, "go", in.GoVersion, "build_time", in.BuildTime}
}
