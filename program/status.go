package program

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/deletion"
)

// DefaultStatusBindAddress is --status-bind-address by default: a loopback
// port beside the probes' (:8081) and pprof's (127.0.0.1:8082). A program
// that runs in the host's network (cni-gc) gives its own.
const DefaultStatusBindAddress = "127.0.0.1:8084"

// The status listener (--status-bind-address): the status page
// (k8s.StatusPath) and, in a dry run, its report (k8s.DryRunPath), the
// same handlers as beside /metrics, served in plain HTTP without
// authentication on a loopback address only. Nothing off the program's
// network namespace reaches it but a port-forward through the API server
// (pods/portforward), which the API server authorizes as the user who asks:
// `kubectl podsweeper` reads it so, and the RBAC that grants the
// port-forward is the gate.

// bindStatus registers --status-bind-address on fs.
func (f *Flags) bindStatus(fs *flag.FlagSet) {
	fs.StringVar(&f.StatusBindAddress, "status-bind-address", f.StatusBindAddress,
		`address of the status page `+k8s.StatusPath+` and of the dry run's report `+k8s.DryRunPath+
			` in plain HTTP without authentication, for a port-forward through the API server (kubectl podsweeper): `+
			`a loopback address only (127.0.0.1, ::1, localhost); "0" turns it off`)
}

// validateStatus refuses a --status-bind-address off loopback: it serves
// without authentication.
func (f *Flags) validateStatus() error {
	if f.StatusBindAddress == Off || loopback(f.StatusBindAddress) {
		return nil
	}
	return fmt.Errorf("--status-bind-address serves the status page without authentication to anyone who reaches it: "+
		"bind it to a loopback address (127.0.0.1, ::1, localhost), not %q, or turn it off with %q", f.StatusBindAddress, Off)
}

// statusEndpoint is --status-bind-address among the endpoints whose
// addresses checkEndpoints checks.
func (f *Flags) statusEndpoint() endpoint {
	return endpoint{"--status-bind-address", f.StatusBindAddress}
}

// serveStatus adds to mgr a server on l (nil: none) of the status page of
// engine and, with a report, of the dry run's report: the handlers Serve
// puts beside /metrics; and the program's own pages (Options.Status). It
// serves on every replica, leader or not, as the probes do: a standby's
// page says it holds no PU.
func serveStatus(mgr manager.Manager, l net.Listener, engine *deletion.Engine, report *k8s.DryRunReport, pages map[string]http.Handler) error {
	if l == nil {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle(k8s.StatusPath, k8s.NewStatusHandler(engine))
	if report != nil {
		mux.Handle(k8s.DryRunPath, report)
	}
	for path, h := range pages {
		if !strings.HasPrefix(path, k8s.StatusPath+"/") || path == k8s.DryRunPath {
			return fmt.Errorf("the status page %q: a program's own page is a path under %s/, not %s", path, k8s.StatusPath, k8s.DryRunPath)
		}
		if h != nil {
			mux.Handle(path, h)
		}
	}
	if err := mgr.Add(&manager.Server{Name: "status", Server: newServer(mux), Listener: l}); err != nil {
		return errors.Join(errors.New("adding the status server"), err)
	}
	return nil
}
