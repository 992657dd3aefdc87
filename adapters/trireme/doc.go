// Package trireme plugs podsweeper into trireme-lib's policy engine and
// offers a drop-in replacement for trireme-lib's pod monitor DeleteController.
//
// It binds to trireme-lib by shape and does not import it (trireme-lib is not
// served by the Go module proxy): NewPolicyHandler turns anything with
// trireme's HandlePUEvent method into a ports.PolicyHandler, and
// NewSandboxExtractor turns an extractors.PodSandboxExtractor into a
// ports.SandboxExtractor. DeleteController keeps the seed's constructor
// arguments, channels and Start, and runs the deletion engine underneath, so
// code written against trireme-lib's DeleteController moves over with a few
// changed lines (see docs/sdk/migrating-from-trireme.md).
package trireme
