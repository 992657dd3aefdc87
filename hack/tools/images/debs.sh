#!/usr/bin/env bash
# hack/tools/images/debs.sh LOCK DIR: the Debian packages LOCK pins, in DIR.
#
# For each line "name version arch sha256" of LOCK, downloads
# name_version_arch.deb with `apt-get download name=version` (once: a file
# already there with the right checksum is kept), refuses it unless its
# SHA-256 is the one pinned, and writes DIR/name.tar (the package's files,
# `dpkg-deb --fsys-tarfile`) and DIR/name.control (its control file), which
# `make images` puts in the cni-gc image and the tests unpack.
#
# apt-get checks each download against the signed lists of the machine's
# sources; the pinned checksum makes sure it is the package this repository
# was tested with. When a package is not found, the lists are updated once
# (apt-get update, as root) and the download tried again. A version that the
# mirror no longer serves (Debian replaces a package on a security update)
# fails with what to do: bump it here, with `apt-cache policy NAME` for the
# version and `sha256sum` of the downloaded file, and run the tests.
set -euo pipefail
lock=${1:?usage: debs.sh LOCK DIR}
dir=${2:?usage: debs.sh LOCK DIR}
mkdir -p "$dir"
updated=false

download() { # name version
	(cd "$dir" && apt-get download -q -o APT::Sandbox::User=root "$1=$2" >/dev/null)
}

while read -r name version arch sum; do
	[[ -z $name || $name == \#* ]] && continue
	deb="$dir/${name}_${version//:/%3a}_${arch}.deb"
	if [[ ! -f $deb ]] || ! sha256sum -c --status <<<"$sum  $deb"; then
		rm -f "$deb"
		if ! download "$name" "$version"; then
			if ! $updated; then
				echo "debs: $name=$version not found: updating the package lists (apt-get update)" >&2
				apt-get update -q >/dev/null
				updated=true
			fi
			download "$name" "$version" || {
				echo "debs: $name=$version cannot be downloaded: the mirror may serve a newer version only ($(apt-cache policy "$name" | awk '/Candidate/ { print $2 }')); bump it in $lock" >&2
				exit 1
			}
		fi
		[[ -f $deb ]] || { echo "debs: apt-get download did not write $deb" >&2; exit 1; }
		if ! sha256sum -c --status <<<"$sum  $deb"; then
			echo "debs: $deb: SHA-256 $(sha256sum "$deb" | cut -d' ' -f1), not the $sum pinned in $lock" >&2
			rm -f "$deb"
			exit 1
		fi
	fi
	dpkg-deb --fsys-tarfile "$deb" >"$dir/$name.tar.tmp"
	mv "$dir/$name.tar.tmp" "$dir/$name.tar"
	dpkg-deb --info "$deb" control >"$dir/$name.control"
done <"$lock"
