package program

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// What Build acquires before its last step, and releases when a step
// fails: the listeners of the probes and of pprof, and the metrics it
// registered. controller-runtime's manager binds the probes' and pprof's
// addresses in NewManager and closes them only when it is started and
// stops; a program whose Build failed later would keep them bound. So
// Build binds them itself, hands the manager "0" for both, and serves them
// as the manager would (endpoints), from servers the manager starts before
// its caches and shuts down when it stops.
type acquired struct {
	listeners []net.Listener
	metrics   *registrations
}

// listen binds addr as the manager would (net.Listen("tcp", addr)); Off
// binds nothing and returns nil.
func (a *acquired) listen(flag, addr string) (net.Listener, error) {
	if addr == Off || addr == "" {
		return nil, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	a.listeners = append(a.listeners, l)
	return l, nil
}

// release closes the listeners and unregisters the metrics.
func (a *acquired) release() {
	for _, l := range a.listeners {
		_ = l.Close()
	}
	if a.metrics != nil {
		a.metrics.undo()
	}
}

// registrations is a prometheus.Registerer that remembers what it
// registered, so that it can be taken back.
type registrations struct {
	prometheus.Registerer
	mu   sync.Mutex
	done []prometheus.Collector
}

// Register registers c and remembers it.
func (r *registrations) Register(c prometheus.Collector) error {
	if err := r.Registerer.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = append(r.done, c)
	return nil
}

// MustRegister registers cs, remembering each, and panics on an error as
// prometheus.Registerer's does.
func (r *registrations) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// undo unregisters what was registered.
func (r *registrations) undo() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.done {
		r.Registerer.Unregister(c)
	}
	r.done = nil
}

// endpoints is the manager Build returns: the manager, whose /healthz and
// /readyz checks (AddHealthzCheck, AddReadyzCheck) and pprof are served
// from listeners Build bound, as the manager would serve them
// (controller-runtime's LivenessEndpointName and ReadinessEndpointName,
// and its pprof paths).
type endpoints struct {
	manager.Manager
	mu          sync.RWMutex // the checks' maps: written by Add*Check, read by each probe
	live, ready healthz.Handler
	// got is what Build acquired, released when Start returns.
	got *acquired
}

// Start runs the manager until ctx is done (manager.Manager's Start), then
// releases what Build acquired: the probes' and pprof's listeners, closed
// already by their servers, and the metrics Build registered, so that a
// second Build may register them again.
func (e *endpoints) Start(ctx context.Context) error {
	defer e.got.release()
	return e.Manager.Start(ctx)
}

// newEndpoints returns mgr with the probes served on probes and pprof on
// profiles (a nil listener serves nothing), from servers added to mgr,
// which releases got when its Start returns.
func newEndpoints(mgr manager.Manager, got *acquired, probes, profiles net.Listener) (*endpoints, error) {
	e := &endpoints{Manager: mgr, live: healthz.Handler{Checks: map[string]healthz.Checker{}},
		ready: healthz.Handler{Checks: map[string]healthz.Checker{}}, got: got}
	var err error
	if probes != nil {
		mux := http.NewServeMux()
		for path, h := range map[string]*healthz.Handler{"/healthz": &e.live, "/readyz": &e.ready} {
			h := http.StripPrefix(path, e.locked(h))
			mux.Handle(path, h)
			mux.Handle(path+"/", h) // one check: /readyz/<name>
		}
		err = mgr.Add(&manager.Server{Name: "health probe", Server: newServer(mux), Listener: probes})
	}
	if profiles != nil {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		err = errors.Join(err, mgr.Add(&manager.Server{Name: "pprof", Server: newServer(mux), Listener: profiles}))
	}
	if err != nil {
		return nil, fmt.Errorf("adding the probes' and pprof's servers: %w", err)
	}
	return e, nil
}

// newServer returns a server of h with the limits of the manager's own.
func newServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, MaxHeaderBytes: 1 << 20, IdleTimeout: 90 * time.Second, ReadHeaderTimeout: 32 * time.Second}
}

// locked serves h under the read lock of the checks.
func (e *endpoints) locked(h *healthz.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		e.mu.RLock()
		defer e.mu.RUnlock()
		h.ServeHTTP(w, req)
	})
}

// AddHealthzCheck adds a liveness check, served on /healthz.
func (e *endpoints) AddHealthzCheck(name string, check healthz.Checker) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.live.Checks[name] = check
	return nil
}

// AddReadyzCheck adds a readiness check, served on /readyz.
func (e *endpoints) AddReadyzCheck(name string, check healthz.Checker) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ready.Checks[name] = check
	return nil
}
