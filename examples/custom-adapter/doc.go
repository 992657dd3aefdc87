// Command custom-adapter shows a PolicyHandler of one's own: StateFiles
// destroys a PU by removing the per-pod state file the agent keeps for it.
// The program creates three PUs, deletes one pod and lets the engine clean up;
// then it restarts the engine, which lists the state files (StateFiles is an
// Inventory too), and destroys the PU of a pod deleted while it was down.
// StateFiles is the engine's Observer as well: it writes into a PU's file the
// sandbox the engine records for it, so that a sandbox replaced while the
// agent was down is destroyed as changed after the restart.
//
//	go run ./examples/custom-adapter
//	go test ./examples/custom-adapter
package main
