// Command firstagent is the agent that docs/sdk/first-agent.md builds, step
// by step, from an empty module: a policy engine of its own (Firewall, the
// PolicyHandler), an Agent that creates a PU for each pod that starts and
// has the deletion engine destroy it once the pod is really gone (Start,
// Track, TriggerPod), a test with gomock mocks and one with the test kit
// under testing/synctest, and a main that runs it in a cluster through the
// assembly the shipped programs share (program.Run).
//
// Every Go block of the guide is a region of these files, which `make test`
// builds and runs.
package main
