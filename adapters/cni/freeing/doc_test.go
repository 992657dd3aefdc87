// Package freeing_test holds the CNI collector's promises of what it frees
// and keeps, driven through its exported API with a scripted plugin that
// logs every call, in private network and mount namespaces
// (internal/privatens): a runtime listing a sandbox twice, an entry freed
// by the runtime meanwhile, two destroys of one pod at once, refusals timed
// across ListPUs, disableGC however its config spells it, and what must be
// kept.
package freeing_test
