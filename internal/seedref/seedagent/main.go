// Command seedagent is the seed's node agent, the yardstick of the node
// agent's whole-process benchmark: trireme-lib's DeleteController loop
// (package seedref) in a process of its own, wired as trireme's pod monitor
// wires it. A controller-runtime manager caches the node's pods whole; a
// reconciler hands the PU of every pod with a network of its own to the
// loop, with its sandbox from the CRI; every 5 s the loop checks every PU,
// one after another: a read of the cache (with its deep copy) and a
// ListPodSandbox call each. Its policy engine logs each destroy.
//
// It serves /tracked (how many PUs the loop holds) and, with
// --pprof-bind-address, Go's /debug/pprof. It is internal: the benchmarks
// of examples/node-agent build and run it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/podsweeper/podsweeper/adapters/cri"
	"github.com/podsweeper/podsweeper/adapters/k8s"
	"github.com/podsweeper/podsweeper/internal/seedref"
	"github.com/podsweeper/podsweeper/ports"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "seedagent:", err)
		os.Exit(1)
	}
}

type config struct {
	kubeconfig, node, criEndpoint, statusAddr, pprofAddr string
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("seedagent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "path to a kubeconfig (required)")
	fs.StringVar(&cfg.node, "node", "", "the node whose pods' PUs the loop keeps (required)")
	fs.StringVar(&cfg.criEndpoint, "cri-endpoint", "", "the container runtime's CRI socket, unix:///... (required)")
	fs.StringVar(&cfg.statusAddr, "status-bind-address", "127.0.0.1:0", "address of /tracked")
	fs.StringVar(&cfg.pprofAddr, "pprof-bind-address", "0", `address of /debug/pprof; "0" turns it off`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.kubeconfig == "" || cfg.node == "" || cfg.criEndpoint == "" || fs.NArg() > 0 {
		return errors.New("usage: seedagent --kubeconfig PATH --node NAME --cri-endpoint unix:///PATH")
	}
	log := zap.New(zap.WriteTo(stderr))
	ctrl.SetLogger(log)
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return err
	}
	// The node agent's client settings, so that only the loops differ.
	rc.QPS, rc.Burst = 50, 100
	cacheOpts, err := k8s.NodeCacheOptions(cfg.node, cache.Options{})
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Cache:            cacheOpts, // whole pods, as trireme's manager caches them
		Metrics:          metricsserver.Options{BindAddress: "0"},
		PprofBindAddress: cfg.pprofAddr,
		Logger:           log,
	})
	if err != nil {
		return err
	}
	extractor, err := cri.New(cfg.criEndpoint, cri.Options{})
	if err != nil {
		return err
	}
	defer extractor.Close()
	requeue := make(chan *corev1.Pod, 1)
	loop := seedref.New(k8s.NewPodGetter(mgr.GetCache()), destroyer(log), seedref.Options{
		SandboxExtractor: extractor, Requeue: requeue,
	})
	go func() { // trireme's main controller reads what the loop requeues
		for range requeue {
		}
	}()
	if err := mgr.Add(managerRunnable(loop.Start)); err != nil {
		return err
	}
	r := &tracker{c: mgr.GetClient(), extractor: extractor, loop: loop}
	if err := builder.ControllerManagedBy(mgr).For(&corev1.Pod{}, builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		Named("seed-pods").Complete(r); err != nil {
		return err
	}
	l, err := net.Listen("tcp", cfg.statusAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), 10*time.Second)
		defer cancel()
		n, err := loop.Len(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, strconv.Itoa(n))
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	log.Info("seed agent serving /tracked", "address", l.Addr().String())
	return mgr.Start(ctx)
}

// managerRunnable runs the loop in the manager.
type managerRunnable func(context.Context) error

func (f managerRunnable) Start(ctx context.Context) error { return f(ctx) }

// tracker is the part of trireme's pod monitor that creates the PUs: for a
// pod with a network of its own that runs, it reads the sandbox from the
// CRI and hands the PU to the loop (which keeps the first it is given).
type tracker struct {
	c         client.Reader
	extractor ports.SandboxExtractor
	loop      *seedref.Controller
}

func (t *tracker) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := t.c.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !k8s.PodsWithOwnNetwork(pod) || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	sandbox, err := t.extractor.SandboxID(ctx, pod)
	if err != nil {
		return reconcile.Result{}, err
	}
	select {
	case t.loop.DeleteCh() <- seedref.Event{PUID: string(pod.UID), Pod: req.NamespacedName, SandboxID: sandbox}:
	case <-ctx.Done():
		return reconcile.Result{}, ctx.Err()
	}
	return reconcile.Result{}, nil
}

func destroyer(log logr.Logger) ports.PolicyHandler {
	return ports.PolicyHandlerFunc(func(_ context.Context, ev ports.DestroyEvent) error {
		log.Info("destroying PU", "puID", ev.PUID, "pod", ev.Pod.String(), "reason", string(ev.Reason))
		return nil
	})
}
