#!/usr/bin/env bash
# hack/images.sh: `make images`, the OCI image of each deployable program.
#
# For each program of examples/ named in IMAGES ("node-agent
# cluster-controller cni-gc"), in IMAGES_DIR (bin/images):
#
#   <name>.bin       the static binary, built as below
#   <name>.cdx.json  its SBOM: CycloneDX from the Go module graph
#                    (cyclonedx-gomod app, with the build's GOOS, GOARCH and
#                    CGO_ENABLED), plus the Debian packages of the image
#   <name>/          the OCI image layout, tagged IMAGE_TAG
#   <name>.oci.tar   that layout as a tar (ctr images import keeps its digest)
#   <name>.tar       the same image as a docker archive, named
#                    IMAGE_REGISTRY/podsweeper-<name>:IMAGE_TAG (docker
#                    load, ctr images import)
#
# and prints "<name> <ref> <manifest digest>" a line, also written to
# IMAGES_DIR/digests.txt.
#
# The binary: CGO_ENABLED=0 (static), -trimpath (no path of this machine in
# it), -ldflags='-s -w', and -buildvcs=true whatever GOFLAGS says: the go
# command records the commit (vcs.revision, vcs.time, vcs.modified) and the
# main module's version (the tag of the commit, or a pseudo-version, with
# "+dirty" for a tree with changes) in the binary, and the image's labels,
# its creation time (unless SOURCE_DATE_EPOCH is set) and the SBOM's main
# component are read from there. Two clean clones of one commit therefore
# build identical images. Building outside a git work tree needs
# IMAGE_BUILDVCS=false and SOURCE_DATE_EPOCH.
#
# An image of your own: `make image PROGRAM=node-agent MODULE=<dir>`
# builds the one program PROGRAM from the main package MAIN (default ".")
# of the Go module in MODULE, which imports the program's wiring with its
# own PolicyHandler (examples/node-agent/agent), named IMAGE_NAME (default
# podsweeper-PROGRAM), as the shipped images are built: the same binary
# flags, SBOM, user and layout, so that the program's chart runs it. MODULE
# must be a git work tree, or IMAGE_BUILDVCS=false with SOURCE_DATE_EPOCH.
#
# The user: node-agent and cluster-controller run as 65532 (nonroot).
# cni-gc runs as root: the plugins it runs for a DEL enter pods' network
# namespaces (CAP_SYS_ADMIN), delete links and iptables rules
# (CAP_NET_ADMIN) and write host-local's files under /var/lib/cni, which
# the runtime's root owns. Its image carries iptables from the Debian
# packages pinned in hack/tools/images/debian.lock (DEBS_DIR, `make debs`).
set -euo pipefail
# MODULE and IMAGES_DIR as the caller named them, before the cd below.
MODULE=${MODULE:+$(cd "$MODULE" && pwd)}
IMAGES_DIR=$(mkdir -p "${IMAGES_DIR:-$(dirname "$0")/../bin/images}" && cd "${IMAGES_DIR:-$(dirname "$0")/../bin/images}" && pwd)
cd "$(dirname "$0")/.."

GO=${GO:-go}
IMAGES=${IMAGES:-node-agent cluster-controller cni-gc}
MAIN=${MAIN:-.}
IMAGE_REGISTRY=${IMAGE_REGISTRY:-}
IMAGE_TAG=${IMAGE_TAG:-dev}
IMAGE_BUILDVCS=${IMAGE_BUILDVCS:-true}
: "${IMAGES_TOOL:?IMAGES_TOOL must be the images command (make images builds it)}"
: "${SBOM_TOOL:?SBOM_TOOL must be the cyclonedx-gomod command (make images builds it)}"
: "${DEBS_DIR:?DEBS_DIR must hold the Debian packages of debian.lock (make debs)}"

# The target of every image; the Debian packages are amd64 too.
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64

mkdir -p "$IMAGES_DIR"
# What an earlier build left of these images goes first: a build that fails or is refused leaves none of it to be
# pushed for this one's; digests.txt is written once every image is built.
rm -f "$IMAGES_DIR/digests.txt"
for name in $IMAGES; do
	rm -rf "${IMAGES_DIR:?}/$name" "$IMAGES_DIR/$name".*
done
digests=()
if [[ -n $MODULE ]]; then
	[[ $IMAGES != *" "* ]] || { echo "images: MODULE builds one program: PROGRAM=node-agent, say" >&2; exit 1; }
	[[ -f $MODULE/go.mod ]] || { echo "images: MODULE=$MODULE holds no go.mod" >&2; exit 1; }
	# The binary, its labels and the SBOM name the module's commit and version alike only from a repository of its
	# own with a commit: refused otherwise, before anything is built.
	if [[ $IMAGE_BUILDVCS == true ]]; then
		top=$(git -C "$MODULE" rev-parse --show-toplevel 2>/dev/null) ||
			{ echo "images: MODULE=$MODULE is no git work tree: run git init there and commit, or build with IMAGE_BUILDVCS=false and SOURCE_DATE_EPOCH" >&2; exit 1; }
		[[ $(cd "$top" && pwd -P) == $(cd "$MODULE" && pwd -P) ]] ||
			{ echo "images: MODULE=$MODULE is inside the git repository $top, not its root: the binary would record that repository's commit and the SBOM another version; make the module a repository of its own (git init there and commit)" >&2; exit 1; }
		git -C "$MODULE" rev-parse -q --verify HEAD >/dev/null ||
			{ echo "images: MODULE=$MODULE's git repository has no commit yet: commit it (git add -A && git commit), for the image names its commit" >&2; exit 1; }
	fi
fi
for name in $IMAGES; do
	[[ -f examples/$name/main.go ]] || { echo "images: no program examples/$name" >&2; exit 1; }
	dir=$PWD main=examples/$name image=${IMAGE_NAME:-podsweeper-$name}
	if [[ -n $MODULE ]]; then
		dir=$MODULE main=${MAIN#./}
		if [[ $IMAGE_BUILDVCS == true && -n $(git -C "$dir" status --porcelain 2>/dev/null) ]]; then
			echo "images: $name: $dir has changes git has not committed: the binary records vcs.modified=true, and the image differs from a clean tree's" >&2
		fi
	fi
	user=65532 debs=()
	if [[ $name == cni-gc ]]; then
		user=0 debs=(-debs "$DEBS_DIR")
	fi
	ref="${IMAGE_REGISTRY:+${IMAGE_REGISTRY%/}/}$image:$IMAGE_TAG"
	echo "images: $name: building the binary from $dir, package ./$main" >&2
	(cd "$dir" && "$GO" build -trimpath -buildvcs="$IMAGE_BUILDVCS" -ldflags='-s -w' -o "$IMAGES_DIR/$name.bin" "./$main")
	echo "images: $name: SBOM" >&2
	# Its log (a warning per module without a license file) goes to a file.
	if ! "$SBOM_TOOL" app -json -noserial -licenses -std -main "$main" -output "$IMAGES_DIR/$name.cdx.json" "$dir" \
		2>"$IMAGES_DIR/$name.cdx.log"; then
		cat "$IMAGES_DIR/$name.cdx.log" >&2
		exit 1
	fi
	echo "images: $name: image $ref" >&2
	digest=$("$IMAGES_TOOL" -binary "$IMAGES_DIR/$name.bin" -ref "$ref" -user "$user" "${debs[@]}" \
		-sbom "$IMAGES_DIR/$name.cdx.json" -out "$IMAGES_DIR")
	digests+=("$name $ref $digest")
done
printf '%s\n' "${digests[@]}" | tee "$IMAGES_DIR/digests.txt"
