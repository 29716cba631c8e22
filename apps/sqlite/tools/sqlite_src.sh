#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fetch the source of the SQLite that this machine runs, from Debian's
# sqlite3 source package, and build its amalgamation (sqlite3.c).
#
#   apps/sqlite/tools/sqlite_src.sh [--quiet]
#
# Prints the unpacked upstream tree on stdout. In it:
#   test/speedtest1.c, ...          the upstream sources
#   bld/sqlite3.c, bld/sqlite3.h    the amalgamation
# The package version is that of the installed libsqlite3-0, so what is
# built from it is the same SQLite as the system's, with other options.
# The cache is ${PMTX_CACHE:-$HOME/.cache/pmtx}/sqlite-src/<version>;
# a finished tree is reused. The deb-src list is private to this script
# (the system's apt sources are not changed). Needs tclsh (scripts/setup.sh
# installs tcl) to build the amalgamation.
set -euo pipefail
quiet=0
[ "${1:-}" = --quiet ] && quiet=1
say() { [ $quiet = 1 ] || echo "sqlite_src: $*" >&2; }

ver=$(dpkg-query -W -f='${source:Version}' libsqlite3-0 2>/dev/null) || {
	echo "sqlite_src: libsqlite3-0 is not installed (scripts/setup.sh)" >&2
	exit 1
}
up=${ver%%-*}
up=${up#*:}
cache=${PMTX_CACHE:-$HOME/.cache/pmtx}/sqlite-src/$ver
tree=$cache/sqlite3-$up
if [ -f "$tree/bld/.done" ]; then
	echo "$tree"
	exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 # two builds at once (ctest -j) wait for one another
if [ -f "$tree/bld/.done" ]; then
	echo "$tree"
	exit 0
fi

apt=$cache/apt
if ! ls "$cache"/sqlite3_"$up".orig.tar.* >/dev/null 2>&1; then
	say "downloading Debian's sqlite3 $ver source package"
	mkdir -p "$apt/lists/partial"
	# The suites and components of the system's own deb lines.
	suites=$(grep -h '^Suites:' /etc/apt/sources.list.d/*.sources \
		2>/dev/null | head -1 | cut -d: -f2)
	cat >"$apt/src.sources" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: ${suites:- bookworm}
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	opts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$apt"
	      -o Dir::State::Lists="$apt/lists" -o APT::Sandbox::User=root)
	apt-get "${opts[@]}" -qq update >&2
	(cd "$cache" && apt-get "${opts[@]}" -qq source --download-only \
		"sqlite3=$ver" >&2)
fi
rm -rf "$tree"
tar -C "$cache" -xf "$cache"/sqlite3_"$up".orig.tar.*
say "building the amalgamation"
mkdir -p "$tree/bld"
(cd "$tree/bld" && ../configure --disable-tcl --disable-readline -q >&2 &&
	make -s sqlite3.c >&2)
touch "$tree/bld/.done"
echo "$tree"
