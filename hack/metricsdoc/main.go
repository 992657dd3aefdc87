package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("o", "docs/metrics.md", `the file to write; "-" writes to standard output`)
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "metricsdoc:", err)
		os.Exit(1)
	}
}

// run writes the reference to out; nothing is written when it cannot be made.
func run(out string) error {
	doc, err := generate(guides)
	if err != nil {
		return err
	}
	if out == "-" {
		_, err = os.Stdout.Write(doc)
		return err
	}
	return os.WriteFile(out, doc, 0o644)
}
