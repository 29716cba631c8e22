#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A planted bug (a mutation site disabled: the redo COMMIT made durable
# after the data is stored in place) must be reported with a reproducer,
# and the reproducer must replay that very violation.
# Usage: planted_bug.sh PMTX_MUT_TOOL
set -u
tool=$1
site=redo.commit_barrier
out=$(PMTX_MUTANT=$site "$tool" crashtest --workload sps --runtime redo \
	--ntx 8 --images 16 --no-progress --stop-after 1 2>&1)
echo "$out" | grep '^VIOLATION' || { echo "not caught"; exit 1; }
args=$(echo "$out" | sed -n "s/.*reproduce: PMTX_MUTANT=$site pmtx-mut crashtest //p" | head -n 1)
[ -n "$args" ] || { echo "no reproducer"; exit 1; }
# shellcheck disable=SC2086
replay=$(PMTX_MUTANT=$site "$tool" crashtest $args 2>&1)
want=$(echo "$out" | grep '^VIOLATION' | head -n 1)
echo "$replay" | grep -qxF "$want" || { echo "replay differs:"; echo "$replay"; exit 1; }
# Without the planted bug the same image passes.
"$tool" crashtest $args 2>&1 | grep -q 'image passes every check' ||
	{ echo "the image fails without the bug"; exit 1; }
echo "caught and replayed: $want"
