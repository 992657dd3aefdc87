// Package docscheck holds the test that keeps the documentation's Go code
// true: every ```go block of a Markdown file of the repository (README.md,
// docs/, the examples' and adapters' READMEs) is preceded by a line
//
//	<!-- compiled: path/to/file.go#name -->
//
// naming a region of a Go file that compiles with the SDK (a test or an
// Example, which `make test` builds and runs), between the lines
// `// docs:begin name` and `// docs:end name`; the block must be that
// region, line for line, less the region's indentation. A Go block without
// such a line, or one that differs from its region, fails the test.
package docscheck
