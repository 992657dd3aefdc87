package main

import "fmt"

func main() {
	fmt.Println("This example is a test suite. Run it with:")
	fmt.Println("  go test -C examples/ubermock ./...")
}
