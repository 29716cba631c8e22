#!/bin/sh
# What a twin commit with one wait instead of two would gain, at most:
# one-wait.patch (an UNSAFE build, for this measurement only) writes the
# back copy before the commit barrier and drops barrier (d), so that no
# write-back is outstanding when the transaction's locked instructions
# run. The same binary runs both ways (EXP_EARLY unset: the released
# protocol; set: the experiment), alternating, 3 times; each line is one
# pmtx-bench process beside PMDK.
# usage (repository root): sh docs/results/goals-2026-11-27/one-wait.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
wt=/tmp/pmtx-one-wait
git worktree remove --force "$wt" 2>/dev/null || true
git worktree add -q --detach "$wt" HEAD
(cd "$wt" && git apply "$here/one-wait.patch" && scripts/build.sh build >/dev/null)
b=$wt/build/bench/pmtx-bench
hw="--domain pdom1 --backend hardware --seconds 0.5 --rounds 1"
for i in 1 2 3; do
	for e in 0 1; do
		if [ $e = 1 ]; then export EXP_EARLY=1; else unset EXP_EARLY; fi
		{
			$b sps --system pmtx-twin,pmdk $hw --p n=100000 --p k=1,8
			$b hashmap --system pmtx-twin,pmdk $hw --p entry=128,512
			$b array --system pmtx-twin,pmdk $hw --p slots=100000 --p slot=4 --p write_pct=10
			$b alloc --system pmtx-twin,pmdk $hw --p x=1
			$b txn --system pmtx-twin,pmdk $hw --writes 1 --allocs 0
		} | E=$e /usr/bin/python3 -c '
import json, os, sys
rows = [json.loads(l) for l in sys.stdin if l.startswith("{")]
for a, b in zip(rows[0::2], rows[1::2]):
    p = {k: v for k, v in a["params"].items()
         if k in ("k", "entry", "write_pct", "x")}
    print(json.dumps({"one_wait": int(os.environ["E"]),
                      "workload": a["workload"], "params": p,
                      "ns_per_op": a["ns_per_op"],
                      "barriers_per_op": a["barriers_per_op"],
                      "pmdk_ns_per_op": b["ns_per_op"]}))'
	done
done
git worktree remove --force "$wt"
