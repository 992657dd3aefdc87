# hack/envtest.mk: builds a real kube-apiserver and etcd for
# controller-runtime's envtest from source, through the Go module proxy only.
#
# Included by the root Makefile (`include hack/envtest.mk`); also usable on its
# own: `make -f hack/envtest.mk [envtest]`.
#
#   ENVTEST_ASSETS  directory receiving the binaries (point KUBEBUILDER_ASSETS
#                   or envtest.Environment.BinaryAssetsDirectory at it)
#   envtest         builds $(ENVTEST_ASSETS)/kube-apiserver, $(ENVTEST_ASSETS)/etcd
#                   and $(ENVTEST_ASSETS)/kubelet (the node of the node agent's
#                   tests, see internal/testnode); each is rebuilt only when
#                   missing or older than its tools module's go.mod/go.sum/source.
#
# Versions are pinned in hack/tools/envtest/*/go.mod (see the README there).
#
# Each build prints one line first, for it prints nothing else for minutes.
# Measured on 2 cores with an empty build cache: kube-apiserver about 8 min,
# the kubelet about 3 min more after it (they share most packages), etcd about
# 1 min; all three about 14 min with an empty module cache too.

# Don't let `envtest` become the including Makefile's default goal (this file
# may be included before its `all:`); standalone, `envtest` is the default.
ENVTEST_SAVED_DEFAULT_GOAL := $(.DEFAULT_GOAL)

# Directory of this fragment, resolved now (before any later include changes
# MAKEFILE_LIST), so the recipes work whatever the including Makefile is.
ENVTEST_MK_DIR := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
ENVTEST_TOOLS_DIR := $(ENVTEST_MK_DIR)/tools/envtest

ENVTEST_ASSETS ?= $(CURDIR)/bin/envtest

ENVTEST_GO ?= go
ENVTEST_GO_BUILD_FLAGS ?= -trimpath
ENVTEST_LDFLAGS ?= -s -w

# Stamp kube-apiserver and the kubelet with their real version (a plain `go build` reports
# v0.0.0-master), read from the tools module's go.mod as kubernetes' own
# hack/lib/version.sh would set it.
ENVTEST_KUBE_VERSION := $(shell awk '{ for (i = 1; i < NF; i++) if ($$i == "k8s.io/kubernetes") { print $$(i+1); exit } }' $(ENVTEST_TOOLS_DIR)/kube-apiserver/go.mod)
ENVTEST_KUBE_VERSION_PARTS := $(subst ., ,$(patsubst v%,%,$(ENVTEST_KUBE_VERSION)))
ENVTEST_ETCD_VERSION := $(shell awk '$$1 == "require" && $$2 == "go.etcd.io/etcd/server/v3" { print $$3; exit }' $(ENVTEST_TOOLS_DIR)/etcd/go.mod)
ENVTEST_KUBE_LDFLAGS := $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(pkg).gitVersion=$(ENVTEST_KUBE_VERSION) \
	-X $(pkg).gitMajor=$(word 1,$(ENVTEST_KUBE_VERSION_PARTS)) \
	-X $(pkg).gitMinor=$(word 2,$(ENVTEST_KUBE_VERSION_PARTS)))

.PHONY: envtest
envtest: $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd $(ENVTEST_ASSETS)/kubelet

$(ENVTEST_ASSETS)/kube-apiserver: $(addprefix $(ENVTEST_TOOLS_DIR)/kube-apiserver/,go.mod go.sum tools.go)
	@echo "envtest: building kube-apiserver $(ENVTEST_KUBE_VERSION) from source (about 8 min on 2 cores the first time)"
	@mkdir -p $(@D)
	$(ENVTEST_GO) build -C $(ENVTEST_TOOLS_DIR)/kube-apiserver $(ENVTEST_GO_BUILD_FLAGS) \
		-ldflags='$(ENVTEST_LDFLAGS) $(strip $(ENVTEST_KUBE_LDFLAGS))' \
		-o $(abspath $@) k8s.io/kubernetes/cmd/kube-apiserver
	@touch $@

# The kubelet comes from the same module (and the same k8s.io/kubernetes) as
# kube-apiserver. (go build leaves a binary that is up to date untouched:
# touch it, or make would run go build again every time.)
$(ENVTEST_ASSETS)/kubelet: $(addprefix $(ENVTEST_TOOLS_DIR)/kube-apiserver/,go.mod go.sum tools.go)
	@echo "envtest: building kubelet $(ENVTEST_KUBE_VERSION) from source (about 3 min on 2 cores the first time, after kube-apiserver)"
	@mkdir -p $(@D)
	$(ENVTEST_GO) build -C $(ENVTEST_TOOLS_DIR)/kube-apiserver $(ENVTEST_GO_BUILD_FLAGS) \
		-ldflags='$(ENVTEST_LDFLAGS) $(strip $(ENVTEST_KUBE_LDFLAGS))' \
		-o $(abspath $@) k8s.io/kubernetes/cmd/kubelet
	@touch $@

$(ENVTEST_ASSETS)/etcd: $(addprefix $(ENVTEST_TOOLS_DIR)/etcd/,go.mod go.sum main.go)
	@echo "envtest: building etcd $(ENVTEST_ETCD_VERSION) from source (about 1 min on 2 cores the first time)"
	@mkdir -p $(@D)
	$(ENVTEST_GO) build -C $(ENVTEST_TOOLS_DIR)/etcd $(ENVTEST_GO_BUILD_FLAGS) \
		-ldflags='$(ENVTEST_LDFLAGS)' -o $(abspath $@) .

ifeq ($(abspath $(firstword $(MAKEFILE_LIST))),$(ENVTEST_MK_DIR)/envtest.mk)
.DEFAULT_GOAL := envtest
else
.DEFAULT_GOAL := $(ENVTEST_SAVED_DEFAULT_GOAL)
endif
