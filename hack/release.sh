#!/usr/bin/env bash
# hack/release.sh VERSION: `make release VERSION=vX.Y.Z`, what a release of
# podsweeper does, in the order VERSIONING.md gives:
#
#   1. CHANGELOG.md: the Unreleased section becomes "## [VERSION] - DATE",
#      under a new, empty Unreleased section, and the links at the bottom
#      follow;
#   2. the API base: make apidiff-base VERSION=VERSION (api/VERSION/,
#      api/RELEASE), the base of make verify-apidiff from then on;
#   3. the charts (examples/*/chart/Chart.yaml): version X.Y.Z, appVersion
#      VERSION, and the kustomize bases' image tags (newTag in
#      examples/*/deploy/kustomization.yaml): VERSION;
#   4. one commit of all that, "Release VERSION", tagged VERSION;
#   5. make images IMAGE_TAG=VERSION on that commit: the images, their
#      SBOMs and digests, whose version label is VERSION (the tag); and
#      make kubectl-podsweeper: the kubectl plugin, bin/kubectl-podsweeper.
#
# Nothing is pushed: the commit, the tag, the images (bin/images) and the plugin are
# left for the maintainer to push, as the last lines say.
#
# DRY_RUN=1 (the default) checks everything the release would refuse and
# prints what it would do, changing nothing; DRY_RUN=0 does it. It refuses
# a VERSION that is not vX.Y.Z, one not above api/RELEASE, a tag that
# exists, an Unreleased section with nothing in it, and a work tree with
# changes (a release is made from a commit, so that its images say which).
# DATE is today (UTC) unless RELEASE_DATE says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

MAKE=${MAKE:-make}
DRY_RUN=${DRY_RUN:-1}
version=${1:-}
date=${RELEASE_DATE:-$(date -u +%Y-%m-%d)}
changelog=CHANGELOG.md
repo_url=https://github.com/podsweeper/podsweeper

die() {
	echo "release: $*" >&2
	exit 1
}

[[ $DRY_RUN == 0 || $DRY_RUN == 1 ]] || die "DRY_RUN must be 1 (print what a release would do) or 0 (do it), not '$DRY_RUN'"
[[ $version =~ ^v([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || die "VERSION must be a release such as v0.2.0, not '$version'"
[[ $date =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] || die "RELEASE_DATE must be YYYY-MM-DD, not '$date'"
last=$(tr -d '[:space:]' <api/RELEASE)
[[ $(printf '%s\n%s\n' "$last" "$version" | sort -V | tail -n 1) == "$version" && $version != "$last" ]] ||
	die "$version is not above the last release, $last (api/RELEASE)"
! git rev-parse -q --verify "refs/tags/$version" >/dev/null || die "the tag $version exists already"
dirty=$(git status --porcelain)
[[ -z $dirty ]] || die "the work tree has changes; a release is made from a commit:"$'\n'"$dirty"

# unreleased prints the body of the Unreleased section.
unreleased() {
	awk '/^## / { on = ($0 ~ /^## \[Unreleased\]/); next } on' "$changelog"
}
body=$(unreleased)
grep -q '[^[:space:]]' <<<"$body" && ! grep -qx 'Nothing yet\.' <<<"$(grep '[^[:space:]]' <<<"$body")" ||
	die "the Unreleased section of $changelog is empty: nothing to release"

charts=(examples/*/chart/Chart.yaml)
kustomizations=(examples/*/deploy/kustomization.yaml)
head=$(git rev-parse --short HEAD)

if [[ $DRY_RUN == 1 ]]; then
	cat <<EOF
release: dry run of $version on $head ($date); DRY_RUN=0 does it.
  1. $changelog: "## [Unreleased]" ($(grep -c '^- ' <<<"$body") entries) becomes "## [$version] - $date", under an empty "## [Unreleased]"; links for $version
  2. $MAKE apidiff-base VERSION=$version: api/$version/ replaces api/$last/, api/RELEASE says $version
  3. ${charts[*]}: version ${version#v}, appVersion $version; ${kustomizations[*]}: newTag $version
  4. git commit -m "Release $version" and git tag $version
  5. $MAKE images IMAGE_TAG=$version: the images of the release commit, their SBOMs and digests; $MAKE kubectl-podsweeper: the plugin
Nothing is pushed.
EOF
	exit 0
fi

echo "release: $version on $head ($date)"
tmp=$(mktemp)
awk -v v="$version" -v d="$date" -v url="$repo_url" '
	/^## \[Unreleased\]/ { print; print ""; print "Nothing yet."; print ""; print "## [" v "] - " d; next }
	/^\[Unreleased\]: / { print "[Unreleased]: " url "/compare/" v "...HEAD"; print "[" v "]: " url "/releases/tag/" v; next }
	{ print }
' "$changelog" >"$tmp"
mv "$tmp" "$changelog"
echo "release: $changelog: the Unreleased section is now $version's"

"$MAKE" --no-print-directory apidiff-base VERSION="$version"

for f in "${charts[@]}"; do
	sed -i -E "s/^version: .*/version: ${version#v}/; s/^appVersion: .*/appVersion: $version/" "$f"
done
for f in "${kustomizations[@]}"; do
	sed -i -E "s/^( *newTag:) .*/\1 $version/" "$f"
done
echo "release: the charts and the kustomize bases run $version"

git add -A "$changelog" api "${charts[@]}" "${kustomizations[@]}"
git commit -q -m "Release $version"
git tag "$version"
echo "release: committed and tagged $version ($(git rev-parse --short HEAD))"

"$MAKE" --no-print-directory images IMAGE_TAG="$version"
"$MAKE" --no-print-directory kubectl-podsweeper
cat <<EOF
release: $version is made. To publish it:
  git push origin HEAD "$version"
  and push each image of bin/images (an OCI layout, e.g. crane push bin/images/node-agent <registry>/podsweeper-node-agent:$version)
  and attach bin/kubectl-podsweeper (the kubectl plugin) to the release
EOF
