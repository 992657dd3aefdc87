// Package procbench measures the SDK's example programs as their users run
// them: whole processes, on a real API server, with pods made by
// server-side apply from a realistic fixture (a Deployment's pod, so that
// the API server writes its own managedFields). It reads a child process's
// CPU time and resident memory from /proc, and its live heap from the Go
// runtime through the process's /debug/pprof endpoint. It is internal and
// used only by benchmarks.
package procbench
