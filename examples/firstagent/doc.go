// Command firstagent is the agent that docs/sdk/first-agent.md builds, step
// by step, from an empty module: a policy engine of its own (Firewall, the
// PolicyHandler), an Agent that creates a PU for each pod that starts and
// has the deletion engine destroy it once the pod is really gone (Start,
// Track, TriggerPod), a test with gomock mocks and one with the test kit
// under testing/synctest, and a main that runs the shipped node agent
// (examples/node-agent/agent) with the Firewall as its PolicyHandler, whose
// image `make image PROGRAM=node-agent MODULE=...` builds for the node
// agent's chart.
//
// Every Go block of the guide is a region of these files, which `make test`
// builds and runs.
package main
