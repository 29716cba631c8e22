#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job, for now: a persistent linked list that survives kill -9.
# It appends nodes in transactions, is killed at random moments, and every
# restart shows the list whole and its count equal to the nodes in it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
ex=build/examples/pmtx-example
path=/dev/shm/pmtx-demo-$$.pmtx
trap 'rm -f "$path"' EXIT

$ex --path "$path" --count 1000
for i in 1 2 3 4 5; do
	$ex --path "$path" --count 100000000 >/dev/null &
	pid=$!
	sleep "0.$((RANDOM % 5 + 1))"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	echo "killed with SIGKILL; reopening:"
	$ex --path "$path" --count 0 | head -1
done
