package metricdoc_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/strand-ledger/strand/internal/metricdoc/extract"
)

// TestUpToDate fails when a metric field's comment changed and
// help_gen.go was not regenerated (`go generate ./internal/metricdoc`).
func TestUpToDate(t *testing.T) {
	docs, err := extract.Module("../..")
	if err != nil {
		t.Fatal(err)
	}
	want, err := extract.Render(docs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("help_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("help_gen.go is stale: a metric field's comment changed; run `go generate ./internal/metricdoc`")
	}
}
