// Package deletiontest is a test kit for the deletion engine, for those who
// write adapters and node agents on podsweeper and for the SDK's own tests.
//
// It holds in-memory stand-ins for the ports, each safe for the engine's
// goroutines:
//
//   - Cluster is the API server and the container runtime of one or more
//     nodes: a ports.PodGetter (so also a Confirmer), a
//     ports.SandboxExtractor and a ports.SandboxProber over the same pods.
//     A test creates, deletes, recreates and moves pods, replaces or kills
//     their sandboxes, and makes reads fail, hang or take time.
//   - Policy is a ports.PolicyHandler that records every DestroyEvent and
//     can fail, fail permanently (ports.Permanent) or hang on demand.
//   - Inventory is a ports.Inventory and a deletion.Observer that keeps what
//     the engine records, as a journal does (adapters/bolt), so that an
//     engine started on it after a restart finds what the last one tracked.
//   - Events is a deletion.Observer that records every Event.
//
// And helpers that keep a test short: NewEngine builds an engine that logs
// nothing, Start runs its Start until the test ends, Advance lets fake time
// pass in a testing/synctest bubble, and PUs lists what an engine tracks.
//
// The engine's periodic checks, retries and deadlines run on the time
// package's clock, which testing/synctest fakes: a test that runs Start in
// a bubble (synctest.Test) sleeps through hours of checks in milliseconds,
// and synctest.Wait returns once every check it started is done. A check
// takes no fake time unless a port sleeps: Cluster.SetReadDelay makes each
// read take a while. A test that needs no time and no Start calls
// Engine.Sweep for one pass over every PU.
//
// docs/sdk/testing.md is the guide to testing an adapter or an agent with
// this kit and with the gomock mocks in package mocks.
package deletiontest
