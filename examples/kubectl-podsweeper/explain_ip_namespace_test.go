package main

import (
	"strings"
	"testing"
	"time"
)

// explain.md:31-34: "`--namespace` (`-n`) is **the programs' namespace** ... With it, the programs of other
// namespaces, if any, are neither listed nor asked: a line `Not asked:` says so, and an answer that finds nothing
// cannot tell." explain ip takes --namespace (its --help lists it). A cni-gc of another release, in another
// namespace, on the same node, freed the address lately; asked with -n of the first release, the answer must not
// say that cni-gc knows nothing of the address.
func TestExplainIPNamespaceNotAskedIsTold(t *testing.T) {
	f := newFakeAPI(t)
	read := time.Now().Add(-12 * time.Second).UTC()
	freed := time.Now().Add(-40 * time.Second).UTC()
	f.addProgram("podsweeper-cni-gc", "podsweeper", "cni-gc-a", "node-a", &programPages{
		addresses: map[string]*AddressStatus{"10.88.0.13": {IP: "10.88.0.13", ReservationsRead: &read}}})
	f.addProgram("podsweeper-cni-gc", "kube-system", "cni-gc-b", "node-a", &programPages{
		addresses: map[string]*AddressStatus{"10.88.0.13": {IP: "10.88.0.13", ReservationsRead: &read, Freed: []FreedAddress{{
			At: freed, Reservation: true, Network: "podnet",
			File: "/var/lib/cni/networks/podnet/10.88.0.13", ContainerID: "c0ffee00d2b34", IfName: "eth0",
			Decision: FreeDecision{At: freed, Reason: "NoSandbox", Row: 18, Why: "x", Verdict: "free"}}}}}})
	r := f.run("explain", "ip", "10.88.0.13", "--node", "node-a", "-n", "podsweeper")
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	mustContain(t, r.stdout, "Not asked: the programs of other namespaces than podsweeper")
	if strings.Contains(r.stdout, "cni-gc knows nothing of this address.") {
		t.Errorf("with -n, the answer says cni-gc knows nothing of the address, though the cni-gc of another namespace, not asked, freed it")
	}
	rj := f.run("explain", "ip", "10.88.0.13", "--node", "node-a", "-n", "podsweeper", "-o", "json")
	mustContain(t, rj.stdout, `"unasked"`)
}
