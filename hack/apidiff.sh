#!/usr/bin/env bash
# hack/apidiff.sh: the API gate of `make verify-apidiff`, and the writer of its
# base, `make apidiff-base` (see VERSIONING.md).
#
#   hack/apidiff.sh verify          compares the API of every public package
#                                   with the last release's, in api/$(cat api/RELEASE)/
#   hack/apidiff.sh write VERSION   writes the API of every public package to
#                                   api/VERSION/, and VERSION to api/RELEASE
#
# APIDIFF is the command that runs golang.org/x/exp/cmd/apidiff (the Makefile
# pins its version), GO the go command.
#
# The public packages are those of `go list ./...` but internal/, examples/,
# hack/ and any other internal/ directory; mocks/ is public. The base has one
# file per package: its export data as `apidiff -w` writes it (the import path
# on the first line), named after the import path below the module with "/"
# made "_" (adapters/k8s: adapters_k8s.api). Only the last release's base is
# kept; earlier ones are in git's history.
#
# The rule: each change that apidiff finds incompatible must be listed in
# CHANGELOG.md, in the "### Breaking" section of "## [Unreleased]". apidiff
# prints a change as "NAME: what changed", NAME being the text before the
# first ": " (and before a ", " after it, as in "T, element type"). A change is
# listed when its NAME appears between backticks in that section. The
# comparison ignores "(", "*" and ")", type parameters in brackets and an
# import path up to its last "/", and NAME may be qualified with its package's
# name: `(*Engine).Len`, `Engine.Len` and `deletion.Engine.Len` all list
# "(*Engine).Len: removed" of package deletion. A package of the base that is
# gone is the change "DIR: package removed", DIR being its directory in the
# module (adapters/cri). Compatible changes are printed and pass.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
: "${APIDIFF:?APIDIFF must be the command that runs apidiff: run make verify-apidiff or make apidiff-base}"
read -r -a apidiff <<<"$APIDIFF"
changelog=CHANGELOG.md
release_file=api/RELEASE

die() {
	echo "$*" >&2
	exit 1
}

module=$("$GO" list -m)

# public_packages prints "IMPORT_PATH NAME DIR" for every public package.
public_packages() {
	"$GO" list -f '{{.ImportPath}} {{.Name}}' ./... | awk -v mod="$module" '
		{ dir = ($1 == mod) ? "" : substr($1, length(mod) + 2) }
		dir ~ /^(internal|examples|hack)(\/|$)/ || dir ~ /(^|\/)internal(\/|$)/ { next }
		{ print $1, $2, dir }'
}

# base_file DIR names the base's file of the package in DIR.
base_file() {
	local dir=${1:-${module##*/}}
	echo "${dir//\//_}.api"
}

# normalize reads names, one a line, and writes them as they are compared.
normalize() {
	sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' \
		-e ':a' -e 's/\[[^][]*\]//g' -e 'ta' \
		-e 's/[(*)]//g' -e 's|.*/||'
}

# breaking_names prints, normalized, every name in backticks in the Breaking
# section of CHANGELOG.md's Unreleased section.
breaking_names() {
	[[ -f $changelog ]] || return 0
	# shellcheck disable=SC2016 # the backticks are Markdown's
	awk '
		/^## / { unreleased = ($0 ~ /^## \[Unreleased\]/); breaking = 0; next }
		unreleased && /^### / { breaking = ($0 ~ /^### Breaking/); next }
		unreleased && breaking { print }
	' "$changelog" | { grep -o '`[^`]*`' || true; } | tr -d '`' | normalize
}

# name_of CHANGE prints the NAME of an apidiff change, normalized.
name_of() {
	local name=${1%%: *}
	name=$(normalize <<<"$name")
	echo "${name%%, *}"
}

# is_listed LISTED PACKAGE NAME reports whether NAME (normalized), of the
# package named PACKAGE, is among the LISTED names.
is_listed() {
	[[ -n $3 ]] && grep -Fxq -e "$3" -e "$2.$3" <<<"$1"
}

write() {
	local version=${1:-}
	[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
		die "apidiff-base: VERSION must be a release, such as v0.1.0, not '$version'"
	local packages path name dir tmp
	packages=$(public_packages)
	mkdir -p api
	tmp=$(mktemp -d api/.write.XXXXXX)
	# shellcheck disable=SC2064 # tmp is local: expand it now
	trap "rm -rf '$tmp'" EXIT
	while read -r path name dir; do
		echo "apidiff-base: $path -> api/$version/$(base_file "$dir")"
		# -trimpath: the file then names the sources by module path, not
		# by where this clone and the module cache are; any clone writes
		# the same bytes.
		GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath" "${apidiff[@]}" -w "$tmp/$(base_file "$dir")" "$path" </dev/null
	done <<<"$packages"
	find api -mindepth 1 -maxdepth 1 -type d -name 'v*' -exec rm -rf {} +
	chmod 755 "$tmp"
	mv "$tmp" "api/$version"
	echo "$version" >"$release_file"
	echo "apidiff-base: api/$version/ is the API of $version, the base of make verify-apidiff; commit it with $release_file"
}

verify() {
	[[ -f $release_file ]] || die "verify-apidiff: $release_file is missing: it names the last release, whose API is in api/<release>/ (make apidiff-base VERSION=vX.Y.Z writes both)"
	local release base
	release=$(tr -d '[:space:]' <"$release_file")
	base=api/$release
	[[ -d $base ]] || die "verify-apidiff: $base/ is missing: run make apidiff-base VERSION=$release on the commit of $release"

	local packages listed
	packages=$(public_packages)
	listed=$(breaking_names)

	# unlisted: the incompatible changes CHANGELOG.md does not list; hint:
	# for each, the name to write in backticks.
	local -a files pids=() unlisted=() hint=() report=()
	local f i path name dir line section change n base_paths="" tmp
	shopt -s nullglob
	files=("$base"/*.api)
	shopt -u nullglob
	((${#files[@]} > 0)) || die "verify-apidiff: $base/ holds no API: run make apidiff-base VERSION=$release on the commit of $release"

	# The packages are compared at once, each by an apidiff of its own:
	# most of each one's time is spent starting the go command.
	tmp=$(mktemp -d)
	# shellcheck disable=SC2064 # tmp is local: expand it now
	trap "rm -rf '$tmp'" EXIT
	for i in "${!files[@]}"; do
		f=${files[$i]}
		path=$(head -n 1 "$f")
		pids[i]=""
		if awk -v p="$path" '$1 == p { found = 1 } END { exit !found }' <<<"$packages"; then
			"${apidiff[@]}" "$f" "$path" >"$tmp/$i.out" 2>"$tmp/$i.err" </dev/null &
			pids[i]=$!
		fi
	done
	for i in "${!files[@]}"; do
		[[ -z ${pids[i]} ]] || wait "${pids[i]}" || {
			cat "$tmp/$i.err" >&2
			die "verify-apidiff: apidiff failed on ${files[$i]}"
		}
	done

	for i in "${!files[@]}"; do
		f=${files[$i]}
		path=$(head -n 1 "$f")
		base_paths+="$path"$'\n'
		line=$(awk -v p="$path" '$1 == p' <<<"$packages")
		if [[ -z $line ]]; then
			dir=${path#"$module"/}
			if is_listed "$listed" "" "$(name_of "$dir")"; then
				report+=("$dir: incompatible, listed under Breaking: package removed")
			else
				unlisted+=("$dir: package removed")
				hint+=("$dir")
			fi
			continue
		fi
		read -r path name dir <<<"$line"
		section=""
		while IFS= read -r line; do
			case $line in
			"Incompatible changes:") section=incompatible ;;
			"Compatible changes:") section=compatible ;;
			"- "*)
				change=${line#- }
				if [[ $section == compatible ]]; then
					report+=("${dir:-.}: compatible: $change")
					continue
				fi
				n=$(name_of "$change")
				if is_listed "$listed" "$name" "$n"; then
					report+=("${dir:-.}: incompatible, listed under Breaking: $change")
				else
					unlisted+=("${dir:-.}: $change")
					hint+=("$name.$n")
				fi
				;;
			esac
		done <"$tmp/$i.out"
	done

	while read -r path name dir; do
		[[ -z $path ]] || grep -Fxq -e "$path" <<<"$base_paths" || report+=("${dir:-.}: compatible: new package")
	done <<<"$packages"

	if ((${#report[@]} > 0)); then
		echo "verify-apidiff: changes to the API of $release ($base/):"
		printf '  %s\n' "${report[@]}"
	fi
	if ((${#unlisted[@]} == 0)); then
		echo "verify-apidiff: no incompatible change to the API of $release that CHANGELOG.md does not list (${#files[@]} packages compared)"
		return 0
	fi

	{
		echo "verify-apidiff: FAIL: incompatible changes to the API of $release that CHANGELOG.md does not list:"
		printf '  %s\n' "${unlisted[@]}"
		cat <<EOF

Undo them or, if they are meant, list each one in CHANGELOG.md, in the
"### Breaking" section of "## [Unreleased]": name it in backticks and say what
users do instead. The name is what apidiff prints before the first ": ", with
or without the "(*" and ")" of a pointer receiver, and may be qualified with
its package's name, as here:

    ## [Unreleased]

    ### Breaking

EOF
		# shellcheck disable=SC2016 # the backticks are Markdown's
		printf '    - `%s`: <what changed, and what to use instead>.\n' "${hint[@]}"
		cat <<EOF

Only a minor release may break the API, never a patch release (VERSIONING.md).
After a release, make apidiff-base VERSION=vX.Y.Z makes its API the new base.
EOF
	} >&2
	return 1
}

case ${1:-} in
verify) verify ;;
write) write "${2:-}" ;;
*) die "usage: $0 verify | write VERSION" ;;
esac
