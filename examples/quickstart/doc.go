// Command quickstart shows podsweeper's whole lifecycle in one run, with no
// cluster: an in-memory API server (controller-runtime's fake client) behind
// adapters/k8s.NewPodGetter, a policy engine that prints what it destroys,
// and a scripted story in which pods are deleted, recreated, restarted,
// moved to another node, and the API server goes down for a while.
//
//	go run ./examples/quickstart
//
// It prints a timeline and a summary, and exits 1 if the engine did not do
// what the story expects.
package main
