package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name      string
		bi        *debug.BuildInfo
		buildTime string
		want      Info
		str       string
	}{
		{"no build info", nil, "", Info{"unknown", "unknown", "unknown", false, "go1.x", "unknown"},
			"strand unknown commit unknown go1.x"},
		{"test binary", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "",
			Info{"devel", "unknown", "unknown", false, "go1.26.8", "unknown"}, "strand devel commit unknown go1.26.8"},
		{"checkout, modified", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-24T21:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}, "",
			Info{"devel", rev, "2026-11-24T21:00:00Z", true, "go1.26.8", "unknown"},
			"strand devel commit 0123456789ab+dirty (2026-11-24T21:00:00Z) go1.26.8"},
		{"release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}}, "2026-11-25T08:00:00Z",
			Info{"v1.2.0", rev, "unknown", false, "go1.26.8", "2026-11-25T08:00:00Z"},
			"strand v1.2.0 commit 0123456789ab go1.26.8 built 2026-11-25T08:00:00Z"},
	} {
		got := fromBuild(c.bi, "go1.x", c.buildTime)
		if got != c.want {
			t.Errorf("%s: fromBuild = %+v, want %+v", c.name, got, c.want)
		}
		if s := got.String(); s != c.str {
			t.Errorf("%s: String() = %q, want %q", c.name, s, c.str)
		}
	}
}

// TestLinkedCommit: a commit set at link time (deploy/image.sh) is used
// where Go stamped none, its "+dirty" becoming Modified.
func TestLinkedCommit(t *testing.T) {
	defer func(c, ct string) { Commit, CommitTime = c, ct }(Commit, CommitTime)
	Commit, CommitTime = "0123456789abcdef0123+dirty", "2026-11-24T21:00:00Z"
	in := Read()
	if in.Commit != "0123456789abcdef0123" || !in.Modified || in.CommitTime != "2026-11-24T21:00:00Z" {
		t.Fatalf("Read() = %+v: want the linked commit, modified, and its time", in)
	}
	if got := in.ShortCommit(); got != "0123456789ab+dirty" {
		t.Errorf("ShortCommit() = %q", got)
	}
}
