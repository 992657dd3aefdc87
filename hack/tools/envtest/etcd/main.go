// Command etcd builds etcd from source (via the Go module proxy) for
// controller-runtime's envtest. See ../README.md.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
