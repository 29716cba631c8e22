#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A program outside the library (examples/explore_stack.c) explores its
# own data structure through the public explorer API. Its broken variant
# (a push updates the count outside the transaction) must be reported
# under every runtime it applies to, with a reproducer that replays the
# violation; the same image passes with the correct program.
# Usage: explore_stack_broken.sh BROKEN_BIN CORRECT_BIN
set -u
broken=$1
correct=$2
name=$(basename "$broken")
out=$("$broken" --json --no-progress --stop-after 1 2>&1)
rc=$?
[ "$rc" -eq 1 ] || { echo "exit status $rc, want 1 (violations):"; echo "$out"; exit 1; }
for rt in undo redo redo-async; do
	echo "$out" | grep -q "\"runtime\":\"$rt\".*\"violations\":[1-9]" ||
		{ echo "runtime $rt: no violation reported"; echo "$out"; exit 1; }
done
want=$(echo "$out" | grep '^VIOLATION' | head -n 1)
[ -n "$want" ] || { echo "no VIOLATION line"; exit 1; }
args=$(echo "$out" | sed -n "s/.*reproduce: $name //p" | head -n 1)
[ -n "$args" ] || { echo "no reproducer"; exit 1; }
# shellcheck disable=SC2086
replay=$("$broken" $args 2>&1)
echo "$replay" | grep -qxF "$want" || { echo "replay differs:"; echo "$replay"; exit 1; }
# shellcheck disable=SC2086
"$correct" $args 2>&1 | grep -q 'image passes every check' ||
	{ echo "the image fails with the correct program"; exit 1; }
echo "caught and replayed: $want"
