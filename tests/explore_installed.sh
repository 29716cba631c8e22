#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# An application explores its own data structure through the installed
# library alone: examples/explore_stack.c, built out of tree with
# `cc $(pkg-config --cflags --libs pmtx)` against a fresh install, calls
# pmtx_explore_main in libpmtx.so (not a copy of it), finds no violation,
# and its broken variant (-DEXPLORE_STACK_BROKEN) is reported (exit 1).
# Usage: explore_installed.sh CMAKE BUILD_DIR SOURCE_DIR LIBDIR CC
set -u
cmake=$1 build=$2 src=$3 libdir=$4 cc=$5
root=$build/_install_explore
trap 'rm -rf "$root"' EXIT
rm -rf "$root"
"$cmake" --install "$build" --prefix "$root/prefix" >/dev/null ||
	{ echo "install failed"; exit 1; }
PKG_CONFIG_PATH=$root/prefix/$libdir/pkgconfig
export PKG_CONFIG_PATH
flags=$(pkg-config --cflags --libs pmtx) || { echo "no pmtx.pc"; exit 1; }
for v in ok broken; do
	def=
	[ "$v" = broken ] && def=-DEXPLORE_STACK_BROKEN
	# shellcheck disable=SC2086
	"$cc" -std=gnu11 -Wall -Wextra -Werror $def -o "$root/stack_$v" \
		"$src/examples/explore_stack.c" $flags ||
		{ echo "$v: build failed"; exit 1; }
	nm -D --undefined-only "$root/stack_$v" | grep -q ' pmtx_explore_main$' ||
		{ echo "$v: pmtx_explore_main is not taken from libpmtx.so"; exit 1; }
done
export LD_LIBRARY_PATH="$root/prefix/$libdir"
"$root/stack_ok" --no-progress --quiet ||
	{ echo "the correct stack: exit status $?, want 0"; exit 1; }
"$root/stack_broken" --no-progress --quiet --stop-after 1
rc=$?
[ "$rc" -eq 1 ] || { echo "the broken stack: exit status $rc, want 1"; exit 1; }
echo "installed: the stack passes, its broken variant is caught"
