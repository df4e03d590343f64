package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/strand-ledger/strand/internal/buildinfo"
)

func TestVersion(t *testing.T) {
	out := mustCLI(t, "version")
	if !strings.HasPrefix(out, "strand ") || !strings.Contains(out, " commit ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("strand version = %q, want strand VERSION commit COMMIT ... %s", out, runtime.Version())
	}
	var in buildinfo.Info
	if err := json.Unmarshal([]byte(mustCLI(t, "version", "--json")), &in); err != nil || in != buildinfo.Read() {
		t.Errorf("strand version --json: %+v, %v; want %+v", in, err, buildinfo.Read())
	}
	if _, err := cli(t, "version", "extra"); err == nil {
		t.Error("strand version extra: no error")
	}
}
