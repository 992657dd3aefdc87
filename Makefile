# podsweeper: every command a contributor or CI needs.
# Tools are pinned here and fetched through the Go module proxy on first use.

SHELL := /usr/bin/env bash -o pipefail
GO ?= go
STATICCHECK_VERSION ?= v0.8.2
APIDIFF_VERSION ?= v0.0.0-20261113113407-e3970619a1a4
APIDIFF ?= $(GO) run golang.org/x/exp/cmd/apidiff@$(APIDIFF_VERSION)
# The last release: its API, in api/$(VERSION)/, is the base of verify-apidiff.
VERSION ?= $(shell cat api/RELEASE 2>/dev/null)
# make release: a dry run unless DRY_RUN=0.
DRY_RUN ?= 1
BENCH_COUNT ?= 6
# Short mode keeps the chaos and model tests to a few seconds; `make test-long` runs them longer.
TEST_FLAGS ?= -race -short -count=1 -timeout=20m
# envtest waits 20 s by default for kube-apiserver and etcd to start (or to start
# again, in the outage tests); a loaded 2-core machine has been seen to need more.
ENVTEST_START_TIMEOUT ?= 60s

-include hack/envtest.mk
# containerd, runc and the pause image of the tests' container node
# (internal/testcontainerd), into CONTAINERD_BIN_DIR (bin/containerd).
-include hack/containerd.mk

# The CNI reference plugins that adapters/cni's tests run for real, built from
# their own tools module (hack/tools/cni-plugins) so that the SDK's go.mod
# never requires them.
CNI_PLUGINS_DIR ?= $(CURDIR)/bin/cni
CNI_TOOLS_DIR := $(CURDIR)/hack/tools/cni-plugins
CNI_PLUGIN_PKGS := github.com/containernetworking/plugins/plugins/main/bridge \
	github.com/containernetworking/plugins/plugins/ipam/host-local \
	github.com/containernetworking/plugins/plugins/main/loopback \
	github.com/containernetworking/plugins/plugins/meta/portmap

# The images of the deployable programs (make images), and the tools that
# build them and render their manifests, each from a tools module of its own
# under hack/tools/ (the SDK's go.mod never requires them), into TOOLS_DIR.
TOOLS_DIR ?= $(CURDIR)/bin/tools
IMAGES_DIR ?= $(CURDIR)/bin/images
IMAGE_REGISTRY ?=
IMAGE_TAG ?= dev
DEBS_DIR ?= $(CURDIR)/bin/debs
DEBS_LOCK := hack/tools/images/debian.lock
IMAGES_TOOL := $(TOOLS_DIR)/images
SBOM_TOOL := $(TOOLS_DIR)/cyclonedx-gomod
HELM := $(TOOLS_DIR)/helm
KUSTOMIZE_RENDER := $(TOOLS_DIR)/kustomize-render
tools_build = @mkdir -p $(TOOLS_DIR) && $(GO) build -C $(<D) -trimpath $(2) -o $(abspath $@) $(1) && touch $(abspath $@)
HELM_VERSION = $(shell awk '$$1 == "require" && $$2 == "helm.sh/helm/v4" { print $$3 }' hack/tools/helm/go.mod)

.PHONY: all generate metrics-doc values-doc verify-generate lint verify-apidiff apidiff-base test test-long bench bench-process ci cni-plugins images debs tools release

all: lint test

## generate: regenerate the mocks of the ports with the pinned mockgen, docs/metrics.md and
## the charts' values references.
generate: metrics-doc values-doc
	$(GO) generate ./...

## metrics-doc: write docs/metrics.md, the reference of every metric the programs
## export, from adapters/k8s (hack/metricsdoc; its test fails when the file is stale).
metrics-doc:
	@mkdir -p docs
	$(GO) run ./hack/metricsdoc -o docs/metrics.md

## values-doc: write docs/operating/values/<program>.md, the reference of each chart's values,
## from its values.yaml (hack/valuesdoc; its test fails when a reference is stale).
values-doc:
	$(GO) run ./hack/valuesdoc

## verify-generate: fail when the committed mocks or generated docs differ from freshly generated ones.
verify-generate: generate
	@git diff --exit-code -- mocks/ docs/metrics.md docs/operating/values/ || { echo "mocks/ or a generated doc is stale: run 'make generate' and commit the result" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- mocks/)" || { echo "untracked files in mocks/: run 'make generate' and commit the result" >&2; git status --porcelain -- mocks/; exit 1; }

# The core must stay free of these: it depends only on the ports.
CORE_FORBIDDEN := sigs.k8s.io/controller-runtime|github.com/prometheus|go.uber.org/zap|go.etcd.io/bbolt|github.com/podsweeper/podsweeper/adapters

## lint: gofmt, go vet, staticcheck, and the core's dependency rule.
lint:
	@bad=$$($(GO) list -deps ./deletion/... | grep -E '$(CORE_FORBIDDEN)' || true); test -z "$$bad" || { echo "deletion must not depend on:"; echo "$$bad"; exit 1; }
	@out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "gofmt would change:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

## verify-apidiff: compare the API of every public package with the last release's
## (api/RELEASE) and fail on an incompatible change that CHANGELOG.md's Unreleased
## section does not name under "### Breaking" (the rule is in hack/apidiff.sh).
verify-apidiff:
	@GO='$(GO)' APIDIFF='$(APIDIFF)' hack/apidiff.sh verify

## apidiff-base: write the API of every public package to api/$(VERSION)/ and
## VERSION to api/RELEASE; after a release: make apidiff-base VERSION=vX.Y.Z.
apidiff-base:
	@GO='$(GO)' APIDIFF='$(APIDIFF)' hack/apidiff.sh write '$(VERSION)'

## cni-plugins: the CNI reference plugins (bridge, host-local, loopback, portmap) into $(CNI_PLUGINS_DIR).
cni-plugins: $(CNI_PLUGINS_DIR)/bridge

# One go build makes the three; bridge stands for them (go build leaves an
# up-to-date binary untouched: touch it, or make would build again each time).
$(CNI_PLUGINS_DIR)/bridge: $(addprefix $(CNI_TOOLS_DIR)/,go.mod go.sum tools.go)
	@echo "building the CNI plugins v1.10.0 (bridge, host-local, loopback, portmap) for adapters/cni's tests into $(CNI_PLUGINS_DIR)"
	@mkdir -p $(CNI_PLUGINS_DIR)
	@$(GO) build -C $(CNI_TOOLS_DIR) -trimpath -ldflags='-s -w' -o $(abspath $(CNI_PLUGINS_DIR))/ $(CNI_PLUGIN_PKGS)
	@touch $(CNI_PLUGINS_DIR)/bridge $(CNI_PLUGINS_DIR)/host-local $(CNI_PLUGINS_DIR)/loopback $(CNI_PLUGINS_DIR)/portmap

## debs: the Debian packages the cni-gc image carries (iptables, its libraries
## and their libc), pinned with their SHA-256 in hack/tools/images/debian.lock,
## into $(DEBS_DIR) (apt-get download; see hack/tools/images/debs.sh).
debs: $(DEBS_DIR)/.stamp

$(DEBS_DIR)/.stamp: $(DEBS_LOCK) hack/tools/images/debs.sh
	@echo "debs: the Debian packages of $(DEBS_LOCK) into $(DEBS_DIR)"
	@hack/tools/images/debs.sh $(DEBS_LOCK) $(DEBS_DIR)
	@touch $@

$(IMAGES_TOOL): hack/tools/images/go.mod $(wildcard hack/tools/images/*.go hack/tools/images/go.sum)
	@echo "tools: building the image builder (go-containerregistry v0.22.1) into $@"
	$(call tools_build,.)

$(SBOM_TOOL): hack/tools/sbom/go.mod $(wildcard hack/tools/sbom/*.go hack/tools/sbom/go.sum)
	@echo "tools: building cyclonedx-gomod v1.10.0 into $@"
	$(call tools_build,github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod)

$(HELM): hack/tools/helm/go.mod $(wildcard hack/tools/helm/*.go hack/tools/helm/go.sum)
	@echo "tools: building helm v4.3.1 into $@ (about 3 minutes on 2 cores the first time)"
	$(call tools_build,helm.sh/helm/v4/cmd/helm,-ldflags='-X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)')

$(KUSTOMIZE_RENDER): hack/tools/kustomize/go.mod $(wildcard hack/tools/kustomize/*.go hack/tools/kustomize/go.sum)
	@echo "tools: building the kustomize renderer (sigs.k8s.io/kustomize/api v0.21.2) into $@"
	$(call tools_build,.)

## tools: the pinned tools of images, release and the manifests' tests, into $(TOOLS_DIR).
tools: $(IMAGES_TOOL) $(SBOM_TOOL) $(HELM) $(KUSTOMIZE_RENDER)

## images: the OCI image of node-agent, cluster-controller and cni-gc, built in Go
## (no Docker) from their static binaries, with an SBOM each, into $(IMAGES_DIR):
## <name>/ (OCI layout), <name>.tar (docker archive), <name>.cdx.json (SBOM),
## and their digests (hack/images.sh says how and why).
images: $(IMAGES_TOOL) $(SBOM_TOOL) debs
	@GO='$(GO)' IMAGES_DIR='$(IMAGES_DIR)' IMAGE_REGISTRY='$(IMAGE_REGISTRY)' IMAGE_TAG='$(IMAGE_TAG)' \
		IMAGES_TOOL='$(IMAGES_TOOL)' SBOM_TOOL='$(SBOM_TOOL)' DEBS_DIR='$(DEBS_DIR)' hack/images.sh

# What the tests need, built by the targets test depends on: the API server's
# binaries, the CNI plugins, the images (the cni-gc image's iptables
# adapters/cni's tests run; the three run as pods on the tests' container
# node), the renderers of the charts and kustomize bases, and what
# hack/release's tests build the images with.
TEST_ENV = KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=$(ENVTEST_START_TIMEOUT) \
	CNI_PLUGINS_DIR=$(CNI_PLUGINS_DIR) CNI_GC_IMAGE=$(IMAGES_DIR)/cni-gc IMAGES_DIR=$(IMAGES_DIR) HELM=$(HELM) KUSTOMIZE_RENDER=$(KUSTOMIZE_RENDER) \
	IMAGES_TOOL=$(IMAGES_TOOL) SBOM_TOOL=$(SBOM_TOOL) DEBS_DIR=$(DEBS_DIR) CONTAINERD_BIN_DIR=$(CONTAINERD_BIN_DIR)

## release: make release VERSION=vX.Y.Z: the CHANGELOG's Unreleased section
## moved under VERSION, its API base (apidiff-base), the charts' and kustomize
## bases' versions, a commit tagged VERSION, then its images and digests.
## A dry run unless DRY_RUN=0 (hack/release.sh says what it refuses).
release:
	@MAKE='$(MAKE)' DRY_RUN='$(DRY_RUN)' hack/release.sh '$(VERSION)'

## test: every test, under the race detector, against a real kube-apiserver and etcd,
## real CNI plugins in a private network namespace and a real containerd node in
## private namespaces (as root).
test: envtest cni-plugins containerd images tools
	$(GO) test -C hack/tools/images $(TEST_FLAGS) ./...
	$(TEST_ENV) $(GO) test $(TEST_FLAGS) ./...

## test-long: the same with the long chaos and model runs, and the cluster
## controller's 20 + 20 partitioned-leader runs (2 + 2 under make test).
test-long: envtest cni-plugins containerd images tools
	$(GO) test -C hack/tools/images -race -count=1 ./...
	$(TEST_ENV) $(GO) test -race -count=1 -timeout=60m ./...

## bench: the benchmarks, BENCH_COUNT times (CLUSTER_COUNT at cluster scale,
## ADAPTER_COUNT for the adapters'), then benchstat's summary and the ratios
## against the seed's loop (see BENCHMARKS.md; about 35 minutes on 2 cores, 45 with
## SLOW_SEED=1). adapters/k8s's need the envtest binaries, adapters/cni's the CNI
## plugins too and root (built first, as root only). The run says which it
## skipped and why. BENCH_ONLY=deletion or BENCH_ONLY=adapters runs those alone.
bench: envtest $(if $(filter 0,$(shell id -u)),cni-plugins)
	GO=$(GO) BENCH_COUNT=$(BENCH_COUNT) BENCH_ONLY=$(BENCH_ONLY) KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=$(ENVTEST_START_TIMEOUT) \
	  CNI_PLUGINS_DIR=$(CNI_PLUGINS_DIR) hack/bench/run.sh

## bench-process: the examples' whole processes on a real API server (and, for the
## node agent, a real kubelet) with realistic pods, full and slim cache side by side
## (BenchmarkProcess; about 6 minutes on 2 cores), then, as root, the node agent on a
## real containerd node with 20 pods beside the seed's loop (BenchmarkProcessContainerd,
## about 3 minutes; its binaries built first); it says what it skipped and why. Raw
## output in bin/bench/process.txt.
bench-process: envtest $(if $(filter 0,$(shell id -u)),cni-plugins containerd)
	@mkdir -p bin/bench
	{ date -u +'# %Y-%m-%dT%H:%M:%SZ'; echo "# $$(nproc) CPUs, load average $$(cut -d' ' -f1-3 /proc/loadavg)"; \
	  KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=$(ENVTEST_START_TIMEOUT) \
	  $(GO) test -run='^$$' -bench='^BenchmarkProcess$$' -benchtime=1x -count=1 -timeout=60m ./examples/node-agent/ ./examples/cluster-controller/ 2>&1 \
	  | grep -vE '^\s+[EIW][0-9]{4} '; \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "# skipped: BenchmarkProcessContainerd: not root: a containerd node runs in private mount, network, PID and cgroup namespaces"; \
	  else \
	    echo "# load average $$(cut -d' ' -f1-3 /proc/loadavg)"; \
	    KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=$(ENVTEST_START_TIMEOUT) \
	    CNI_PLUGINS_DIR=$(CNI_PLUGINS_DIR) CONTAINERD_BIN_DIR=$(CONTAINERD_BIN_DIR) \
	    $(GO) test -run='^$$' -bench='^BenchmarkProcessContainerd$$' -benchtime=1x -count=1 -timeout=30m -v ./examples/node-agent/ 2>&1 \
	    | grep -vE '^\s+[EIW][0-9]{4} ' \
	    | awk '{ print } /^--- SKIP: / { print "# skipped: " $$3 ": " why } { why = $$0; sub(/^[ \t]+[^ ]+: /, "", why) }'; \
	  fi; } | tee bin/bench/process.txt

## ci: what .ci/run runs on a clean clone.
ci: verify-generate lint verify-apidiff test
