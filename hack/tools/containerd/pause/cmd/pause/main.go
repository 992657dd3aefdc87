// Command pause is the sandbox ("pause") process of the tests' container
// node: the first process of every pod's PID namespace when the pod shares
// one, and the holder of its namespaces otherwise. It reaps every child
// that is reparented to it, and exits 0 on SIGTERM or SIGINT, as
// registry.k8s.io/pause does. It is built static (CGO_ENABLED=0) and put
// alone in an image by ../../main.go.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		// Reap every child that has exited; SIGCHLDs coalesce.
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
