// Package metricdoc holds the HELP text of strand's Prometheus metrics:
// the doc comments of the Metrics struct fields that node's struct
// collector exports, extracted from the source by `go generate` (gen/),
// so that the comment a field's author writes is what an operator reads
// in /metrics. TestUpToDate fails when a comment changed and the table
// was not regenerated.
package metricdoc

//go:generate go run ./gen -root ../.. -out help_gen.go

import "reflect"

// Help returns the doc comment of field of struct type t, as one line,
// and whether the table has it.
func Help(t reflect.Type, field string) (string, bool) {
	h, ok := help[t.PkgPath()+"."+t.Name()+"."+field]
	return h, ok
}
