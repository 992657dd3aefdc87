# hack/containerd.mk: builds the tests' container node from source, through
# the Go module proxy and one Debian package only: containerd, ctr and
# containerd-shim-runc-v2 (CGO_ENABLED=0), runc with seccomp (statically
# linked against libseccomp from the Debian package libseccomp-dev,
# downloaded and unpacked, never installed), and a pause image made in Go.
# internal/testcontainerd runs them in private namespaces.
#
# Included by the root Makefile; also usable on its own:
# `make -f hack/containerd.mk containerd`.
#
#   CONTAINERD_BIN_DIR  directory receiving containerd, ctr,
#                       containerd-shim-runc-v2, runc, pause.tar (the
#                       image, tagged $(CONTAINERD_PAUSE_IMAGE)) and
#                       busybox.tar (the shell image, tagged
#                       $(CONTAINERD_SHELL_IMAGE)); each is rebuilt only
#                       when missing or older than its tools module's files.
#
# Versions are pinned in hack/tools/containerd/{,runc/,pause/}go.mod and, for
# libseccomp and busybox, below. Each build prints one line first, for it prints nothing
# else for minutes. Measured on 2 cores (see hack/tools/containerd/README.md).

CONTAINERD_SAVED_DEFAULT_GOAL := $(.DEFAULT_GOAL)

CONTAINERD_MK_DIR := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
CONTAINERD_TOOLS_DIR := $(CONTAINERD_MK_DIR)/tools/containerd
CONTAINERD_BIN_DIR ?= $(CURDIR)/bin/containerd
CONTAINERD_GO ?= go
# The image the node's containerd pins as its sandbox image
# (internal/testcontainerd.PauseImage says the same).
CONTAINERD_PAUSE_IMAGE := podsweeper.test/pause:1
# The image of the shell that manifests' init containers run on the node
# (internal/testcontainerd.ShellImage says the same).
CONTAINERD_SHELL_IMAGE := podsweeper.test/busybox:1

CONTAINERD_VERSION := $(shell awk '$$1 == "require" && $$2 == "github.com/containerd/containerd/v2" { print $$3; exit }' $(CONTAINERD_TOOLS_DIR)/go.mod)
RUNC_VERSION := $(shell awk '$$1 == "require" && $$2 == "github.com/opencontainers/runc" { print $$3; exit }' $(CONTAINERD_TOOLS_DIR)/runc/go.mod)

# libseccomp-dev of Debian 12 (bookworm), amd64: the static library and
# headers runc's seccomp support links against. The checksum is the one
# Debian's archive lists for this version (apt-cache show); a package that
# differs is refused.
LIBSECCOMP_DEB_VERSION := 2.5.4-1+deb12u1
LIBSECCOMP_DEB_SHA256 := 5fb305f3aeb293e2b78a4cfcb58c0f42179703c371a408d002c8454661e6b7b2
LIBSECCOMP_DEB := libseccomp-dev_$(LIBSECCOMP_DEB_VERSION)_amd64.deb
# The version is in the directory's name: a new pin unpacks afresh.
LIBSECCOMP_ROOT := $(CONTAINERD_BIN_DIR)/libseccomp-$(LIBSECCOMP_DEB_VERSION)

# busybox-static of Debian 12 (bookworm), amd64: the one binary of the
# shell image. The checksum is the one Debian's archive lists for this
# version (apt-cache show busybox-static); a package that differs is refused.
BUSYBOX_DEB_VERSION := 1:1.35.0-4+deb12u1+b1
BUSYBOX_DEB_SHA256 := 3d3fdbe91d4660c873e14b092c213fe81c1da6362daa236eb25d0171eb108744
BUSYBOX_DEB := busybox-static_$(subst :,%3a,$(BUSYBOX_DEB_VERSION))_amd64.deb

.PHONY: containerd
containerd: $(CONTAINERD_BIN_DIR)/containerd $(CONTAINERD_BIN_DIR)/runc $(CONTAINERD_BIN_DIR)/pause.tar $(CONTAINERD_BIN_DIR)/busybox.tar

# One go build makes the three; containerd stands for them (go build leaves
# an up-to-date binary untouched: touch them, or make would build again).
$(CONTAINERD_BIN_DIR)/containerd: $(addprefix $(CONTAINERD_TOOLS_DIR)/,go.mod go.sum tools.go)
	@echo "building containerd $(CONTAINERD_VERSION) (containerd, ctr, containerd-shim-runc-v2) for the tests' container node into $(CONTAINERD_BIN_DIR) (about 6 min on 2 cores the first time)"
	@mkdir -p $(CONTAINERD_BIN_DIR)
	@CGO_ENABLED=0 $(CONTAINERD_GO) build -C $(CONTAINERD_TOOLS_DIR) -trimpath \
		-ldflags='-s -w -X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION)' \
		-o $(abspath $(CONTAINERD_BIN_DIR))/ github.com/containerd/containerd/v2/cmd/containerd \
		github.com/containerd/containerd/v2/cmd/ctr github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
	@touch $(addprefix $(CONTAINERD_BIN_DIR)/,containerd ctr containerd-shim-runc-v2)

# The package is downloaded (apt-get download: the machine's apt sources,
# refreshed once if they do not know it), checked, and unpacked into
# $(LIBSECCOMP_ROOT); its shared library is removed, so that the static one
# is linked. Nothing is installed.
$(LIBSECCOMP_ROOT)/.unpacked:
	@echo "fetching libseccomp-dev $(LIBSECCOMP_DEB_VERSION) (Debian) for runc's seccomp support"
	@test "$$(dpkg --print-architecture 2>/dev/null)" = amd64 || { echo "libseccomp-dev is pinned for amd64; this machine is $$(dpkg --print-architecture 2>/dev/null || echo 'not Debian')" >&2; exit 1; }
	@rm -rf $(LIBSECCOMP_ROOT) $(CONTAINERD_BIN_DIR)/deb && mkdir -p $(CONTAINERD_BIN_DIR)/deb
	@cd $(CONTAINERD_BIN_DIR)/deb && { apt-get -qq -o APT::Sandbox::User=root download libseccomp-dev=$(LIBSECCOMP_DEB_VERSION) 2>/dev/null || \
		{ apt-get -qq update && apt-get -qq -o APT::Sandbox::User=root download libseccomp-dev=$(LIBSECCOMP_DEB_VERSION); }; }
	@echo "$(LIBSECCOMP_DEB_SHA256)  $(CONTAINERD_BIN_DIR)/deb/$(LIBSECCOMP_DEB)" | sha256sum --check --quiet
	@dpkg-deb -x $(CONTAINERD_BIN_DIR)/deb/$(LIBSECCOMP_DEB) $(LIBSECCOMP_ROOT)
	@rm -f $(LIBSECCOMP_ROOT)/usr/lib/*/libseccomp.so* && test -f $(LIBSECCOMP_ROOT)/usr/lib/x86_64-linux-gnu/libseccomp.a
	@rm -rf $(CONTAINERD_BIN_DIR)/deb
	@touch $@

# runc as its Makefile's static build makes it, without libpathrs (a Rust
# library): cgo, -tags seccomp, linked with -static. CGO_LDFLAGS names this
# checkout's libseccomp: it is part of the key of Go's build cache, which
# pkg-config's answer is not, so a second checkout sharing that cache does
# not link with the first one's path.
$(CONTAINERD_BIN_DIR)/runc: $(addprefix $(CONTAINERD_TOOLS_DIR)/runc/,go.mod go.sum tools.go) $(LIBSECCOMP_ROOT)/.unpacked
	@echo "building runc $(RUNC_VERSION) with seccomp for the tests' container node into $(CONTAINERD_BIN_DIR) (about 3 min on 2 cores the first time)"
	@mkdir -p $(CONTAINERD_BIN_DIR)
	@CGO_ENABLED=1 PKG_CONFIG_SYSROOT_DIR=$(LIBSECCOMP_ROOT) PKG_CONFIG_PATH=$(LIBSECCOMP_ROOT)/usr/lib/x86_64-linux-gnu/pkgconfig \
		CGO_LDFLAGS='-L$(LIBSECCOMP_ROOT)/usr/lib/x86_64-linux-gnu' \
		$(CONTAINERD_GO) build -C $(CONTAINERD_TOOLS_DIR)/runc -trimpath -tags 'seccomp urfave_cli_no_docs netgo osusergo' \
		-ldflags='-s -w -X main.version=$(patsubst v%,%,$(RUNC_VERSION)) -linkmode external -extldflags -static' \
		-o $(abspath $@) github.com/opencontainers/runc
	@touch $@

# The pause image: a static Go binary that reaps children and sleeps until
# SIGTERM, alone in an image written by pause/main.go (go-containerregistry).
$(CONTAINERD_BIN_DIR)/pause.tar: $(addprefix $(CONTAINERD_TOOLS_DIR)/pause/,go.mod go.sum main.go cmd/pause/main.go) $(CONTAINERD_MK_DIR)/containerd.mk
	@echo "writing the pause image $(CONTAINERD_PAUSE_IMAGE) into $(CONTAINERD_BIN_DIR) (about 2 min on 2 cores the first time)"
	@mkdir -p $(CONTAINERD_BIN_DIR)
	@CGO_ENABLED=0 $(CONTAINERD_GO) build -C $(CONTAINERD_TOOLS_DIR)/pause -trimpath -ldflags='-s -w' -o $(abspath $(CONTAINERD_BIN_DIR))/pause ./cmd/pause
	@$(CONTAINERD_GO) run -C $(CONTAINERD_TOOLS_DIR)/pause . -binary $(abspath $(CONTAINERD_BIN_DIR))/pause \
		-tag $(CONTAINERD_PAUSE_IMAGE) -o $(abspath $@)

# The shell image: the package downloaded as libseccomp-dev is (apt-get
# download, checked, never installed), its /bin/busybox alone taken out, and
# written into an image by pause/main.go (-shell). Nothing else is kept.
$(CONTAINERD_BIN_DIR)/busybox.tar: $(addprefix $(CONTAINERD_TOOLS_DIR)/pause/,go.mod go.sum main.go) $(CONTAINERD_MK_DIR)/containerd.mk
	@echo "writing the shell image $(CONTAINERD_SHELL_IMAGE) (Debian's busybox-static $(BUSYBOX_DEB_VERSION)) into $(CONTAINERD_BIN_DIR)"
	@test "$$(dpkg --print-architecture 2>/dev/null)" = amd64 || { echo "busybox-static is pinned for amd64; this machine is $$(dpkg --print-architecture 2>/dev/null || echo 'not Debian')" >&2; exit 1; }
	@rm -rf $(CONTAINERD_BIN_DIR)/busybox-deb && mkdir -p $(CONTAINERD_BIN_DIR)/busybox-deb
	@cd $(CONTAINERD_BIN_DIR)/busybox-deb && { apt-get -qq -o APT::Sandbox::User=root download busybox-static=$(BUSYBOX_DEB_VERSION) 2>/dev/null || \
		{ apt-get -qq update && apt-get -qq -o APT::Sandbox::User=root download busybox-static=$(BUSYBOX_DEB_VERSION); }; }
	@echo "$(BUSYBOX_DEB_SHA256)  $(CONTAINERD_BIN_DIR)/busybox-deb/$(BUSYBOX_DEB)" | sha256sum --check --quiet
	@dpkg-deb -x $(CONTAINERD_BIN_DIR)/busybox-deb/$(BUSYBOX_DEB) $(CONTAINERD_BIN_DIR)/busybox-deb/root
	@$(CONTAINERD_GO) run -C $(CONTAINERD_TOOLS_DIR)/pause . -shell -binary $(abspath $(CONTAINERD_BIN_DIR))/busybox-deb/root/bin/busybox \
		-tag $(CONTAINERD_SHELL_IMAGE) -o $(abspath $@)
	@rm -rf $(CONTAINERD_BIN_DIR)/busybox-deb

ifeq ($(abspath $(firstword $(MAKEFILE_LIST))),$(CONTAINERD_MK_DIR)/containerd.mk)
.DEFAULT_GOAL := containerd
else
.DEFAULT_GOAL := $(CONTAINERD_SAVED_DEFAULT_GOAL)
endif
