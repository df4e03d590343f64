// Package report renders benchmark results: a text table, JSON and CSV
// files, a self-contained HTML report (inline SVG charts, no external
// assets, well-formed XHTML), and a side-by-side comparison of two JSON
// files with ratios.
//
// The JSON file is the exchange format: {"rounds": [bench.Result, ...]};
// ReadJSON reads it back for Compare. Every writer takes the results in
// round order and writes nothing else, so outputs are reproducible from
// the JSON alone.
package report
