// Command gen writes metricdoc's table (help_gen.go) from the module's
// source: see package extract.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/strand-ledger/strand/internal/metricdoc/extract"
)

func main() {
	root := flag.String("root", ".", "the module's root directory")
	out := flag.String("out", "help_gen.go", "the file to write")
	flag.Parse()
	docs, err := extract.Module(*root)
	if err != nil {
		log.Fatal(err)
	}
	src, err := extract.Render(docs)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
